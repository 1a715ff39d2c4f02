#!/usr/bin/env bash
# Makes simpletunnel-VERSION-linux-ARCH.tar.gz for distributions other than
# Debian's: both programs (Swift's runtime linked in; they need glibc,
# libstdc++ and OpenSSL 3), the example systemd unit (it expects them in
# /usr/local/bin) and the README. Prints the archive's path as its last line.
#
# Usage: Packaging/build-tarball.sh [--binaries DIR] [--output DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binaries=""
output="$root/.build/packaging"
while [ $# -gt 0 ]; do
    case "$1" in
        --binaries) binaries=$(cd "$2" && pwd); shift 2 ;;
        --output) output="$2"; shift 2 ;;
        *) echo "usage: $0 [--binaries DIR] [--output DIR]" >&2; exit 2 ;;
    esac
done
if [ -z "$binaries" ]; then
    binaries=$("$root/Packaging/build-binaries.sh" | tail -n 1)
fi
version=$("$binaries/tunnel-server" --version)
name="simpletunnel-$version-linux-$(uname -m)"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
install -D -m 0755 -t "$work/$name" "$binaries/tunnel-server" "$binaries/tunnel-client"
install -m 0644 -t "$work/$name" "$root/Examples/tunnel-server.service" "$root/README.md"
mkdir -p "$output"
archive="$(cd "$output" && pwd)/$name.tar.gz"
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" \
    | gzip -9n >"$archive"
echo "$archive"
