#!/usr/bin/env bash
# Builds tunnel-server and tunnel-client for release with Swift's runtime
# linked in (--static-swift-stdlib), strips them into OUTPUT (default
# .build/packaging/bin), and checks that they need nothing but libc, libm,
# libstdc++, libgcc_s and the system's OpenSSL 3 at run time.
# Prints OUTPUT as its last line.
#
# Usage: Packaging/build-binaries.sh [OUTPUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
output=${1:-$root/.build/packaging/bin}
command -v swift >/dev/null 2>&1 || export PATH="/opt/swift/usr/bin:$PATH"
cd "$root"

# No $ORIGIN run path (nothing is loaded from beside the binary), and
# relocations resolved at start so the GOT can be read-only (full RELRO).
build=(swift build -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now)
for product in tunnel-server tunnel-client; do
    "${build[@]}" --product "$product" >&2
done
bin_path=$("${build[@]}" --show-bin-path)

mkdir -p "$output"
# Only the libraries every Debian system has, and OpenSSL 3, may be needed.
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-[a-z0-9_-]+\.so\.[0-9]+|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libssl\.so\.3|libcrypto\.so\.3)$'
for product in tunnel-server tunnel-client; do
    strip --strip-all -o "$output/$product" "$bin_path/$product"
    unexpected=$(ldd "$output/$product" | awk '{print $1}' | grep -Ev "$allowed" || true)
    if [ -n "$unexpected" ]; then
        echo "build-binaries: $product needs libraries a Debian system may lack: $unexpected" >&2
        exit 1
    fi
done
echo "$output"
