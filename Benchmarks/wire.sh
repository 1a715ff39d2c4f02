#!/usr/bin/env bash
# Prints encode+frame and deframe+decode throughput of a 16 KiB `data`
# message and a 32 x 1400-byte `packets` message (release build).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product WireBenchmark >/dev/null
exec "$(swift build -c release --show-bin-path)/WireBenchmark"
