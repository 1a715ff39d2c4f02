#!/usr/bin/env bash
# Prints the instructions one data message costs in TunnelMultiplexer alone
# (release build), counted by callgrind: steadier than wall time on a shared
# machine. `peer data`: a data message from the peer, to the flow's socket;
# `local read`: bytes read from the flow's socket, to the peer as one message.
# One message's cost is the difference between runs of two lengths, so
# start-up and the flow's open are left out. Needs valgrind.
# Usage: multiplexer-instructions.sh [scenario...]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product MultiplexerBenchmark | grep -E "error|warning" || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the toolchain's DWARF 5 debug info.
strip --strip-debug -o "$work/MultiplexerBenchmark" "$(swift build -c release --show-bin-path)/MultiplexerBenchmark"
instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$work/MultiplexerBenchmark" "$@" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
short=1000
long=6000
if [ $# -eq 0 ]; then
    set -- "peer data 16 KiB" "peer data 64 B" "local read 16 KiB" "local read 64 B"
fi
printf '%-18s %12s\n' scenario "instructions per message"
for scenario in "$@"; do
    a=$(instructions "$scenario" $short)
    b=$(instructions "$scenario" $long)
    printf '%-18s %12d\n' "$scenario" $(( (b - a) / (long - short) ))
done
