#!/usr/bin/env bash
# Prints the instructions one encode+frame, and one deframe+decode, of each
# message costs (release build), counted by callgrind: steadier than wall time
# on a shared machine.
# `encode`: TunnelFrame.encode into one reused buffer (as Benchmarks/wire.sh);
# `pieces`: TunnelFrame.encodePieces into a new buffer, as TunnelFrameEncoder;
# `decode`: TunnelFrameDecoder.nextPayload and TunnelFrame.decodeMessage.
# One message's cost is the difference between runs of two lengths, so
# start-up is left out. Needs valgrind. Usage: wire-instructions.sh [scenario...]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product WireBenchmark | grep -E "error|warning" || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the toolchain's DWARF 5 debug info.
strip --strip-debug -o "$work/WireBenchmark" "$(swift build -c release --show-bin-path)/WireBenchmark"
instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$work/WireBenchmark" --encode-count "$@" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
short=1000
long=6000
if [ $# -eq 0 ]; then
    set -- "open tcp" "openResult" "close" "data 64 B" "data 64 B udp" "data 16 KiB" "packets 32x1400" "packets 1x64KiB"
fi
# WIRE_MODES="decode" measures one column only.
modes=${WIRE_MODES:-encode pieces decode}
header=$(printf '%-16s' scenario)
for mode in $modes; do header+=$(printf ' %10s' "$mode"); done
echo "$header   (instructions per message)"
for scenario in "$@"; do
    line=$(printf '%-16s' "$scenario")
    for mode in $modes; do
        a=$(instructions $mode "$scenario" $short)
        b=$(instructions $mode "$scenario" $long)
        line+=$(printf ' %10d' $(( (b - a) / (long - short) )))
    done
    echo "$line"
done
