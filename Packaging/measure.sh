#!/usr/bin/env bash
# Prints the figures the packaging is held to: each stripped binary's size
# and start-up time (`--version`, median of 21 runs), the libraries it
# needs, the package's size, and tunnel-server.service's exposure score.
#
# Usage: Packaging/measure.sh BINARIES_DIR [simpletunnel_VERSION_ARCH.deb]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARIES_DIR [DEB]" >&2; exit 2; }
binaries=$1
for program in tunnel-server tunnel-client; do
    python3 - "$binaries/$program" <<'PYTHON'
import os, statistics, subprocess, sys, time
path = sys.argv[1]
times = []
for _ in range(21):
    start = time.perf_counter()
    subprocess.run([path, "--version"], check=True, stdout=subprocess.DEVNULL)
    times.append(time.perf_counter() - start)
size = os.path.getsize(path)
print(f"{os.path.basename(path)}: {size / 2**20:.1f} MiB stripped, --version median {statistics.median(times) * 1000:.1f} ms")
PYTHON
    echo "  needs: $(ldd "$binaries/$program" | awk '{print $1}' | xargs)"
done
if [ $# -ge 2 ]; then
    echo "$(basename "$2"): $(python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 2**20:.1f} MiB')" "$2")"
    echo "  Depends: $(dpkg-deb -f "$2" Depends)"
fi
root=$(cd "$(dirname "$0")" && pwd)
systemd-analyze security --offline=yes "$root/systemd/tunnel-server.service" 2>&1 | grep 'Overall exposure'
