#!/usr/bin/env bash
# Admission under a flood of idle sockets, against the release tunnel-server:
# COUNT idle TCP connections from 127.0.0.2 held (and reopened whenever the
# server closes one) for SECONDS, while once a second a legitimate client
# from 127.0.0.1 connects, finishes TLS and gets its fetchConfiguration
# answered. Prints the legitimate clients' times and failures, the server's
# log size and its peak RSS.
#
#   Benchmarks/admission-flood.sh [COUNT] [SECONDS]     (defaults: 2000, 20)
#
# Needs: swift, python3. Loopback only (127.0.0.1 and 127.0.0.2).
set -euo pipefail

COUNT=${1:-2000}
SECONDS_TO_RUN=${2:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

swift build -c release --product tunnel-server >&2
SERVER="$(swift build -c release --show-bin-path)/tunnel-server"

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Both sides hold a descriptor per socket.
ulimit -n $((COUNT * 2 + 1024))

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SERVER" --port "$PORT" --state-directory "$WORK/state" --no-ip-layer --log-level info 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q "listening on" "$WORK/server.log" 2>/dev/null && break
    sleep 0.1
done

python3 Benchmarks/admission_flood_helper.py flood --port "$PORT" --count "$COUNT" --seconds "$SECONDS_TO_RUN" --out "$WORK/result.json"
echo "server log: $(wc -l <"$WORK/server.log") lines, $(wc -c <"$WORK/server.log") bytes in ${SECONDS_TO_RUN} s"
echo "server peak RSS: $(grep VmHWM "/proc/$SERVER_PID/status" | awk '{print $2, $3}')"
grep -m3 "refusing connections" "$WORK/server.log" || true
