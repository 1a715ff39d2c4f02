#!/usr/bin/env bash
# Admission and logins under attack, against the release tunnel-server.
#
#   Benchmarks/admission-flood.sh idle [COUNT] [SECONDS]   (defaults: 2000, 20)
#     COUNT idle TCP connections from 127.0.0.2 held (and reopened whenever
#     the server closes one) for SECONDS, while once a second a legitimate
#     client from 127.0.0.1 connects, finishes TLS and gets its
#     fetchConfiguration answered: its times and failures.
#
#   Benchmarks/admission-flood.sh logins [COUNT]           (default: 200)
#     With a users file (alice, the default 210000 iterations):
#     hoard:   COUNT connections from 127.0.0.2, each a wrong login followed at
#              once by 64 data messages of 120 KiB; the server's peak RSS after.
#     guesses: COUNT parallel wrong logins from 127.0.0.3 while alice logs in
#              with the right password from 127.0.0.1; how many guesses were
#              hashed (one "wrong login or password" line each) and how long
#              the right login took.
#
# Both print the server's log size and peak RSS. Needs: swift, python3.
# Loopback only (127.0.0.1 to 127.0.0.3).
set -euo pipefail

MODE=${1:-idle}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

swift build -c release --product tunnel-server >&2
SERVER="$(swift build -c release --show-bin-path)/tunnel-server"
HELPER=Benchmarks/admission_flood_helper.py

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

start_server() {
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$SERVER" --port "$PORT" --state-directory "$WORK/state" --no-ip-layer "$@" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$WORK/server.log" 2>/dev/null && break
        sleep 0.1
    done
}

rss() { grep "$1" "/proc/$SERVER_PID/status" | awk '{print $2, $3}'; }

case "$MODE" in
idle)
    COUNT=${2:-2000}
    SECONDS_TO_RUN=${3:-20}
    # Both sides hold a descriptor per socket.
    ulimit -n $((COUNT * 2 + 1024))
    start_server
    python3 "$HELPER" flood --port "$PORT" --count "$COUNT" --seconds "$SECONDS_TO_RUN" --out "$WORK/result.json"
    grep -m3 "refusing connections" "$WORK/server.log" || true
    ;;
logins)
    COUNT=${2:-200}
    ulimit -n $((COUNT * 4 + 1024))
    echo wonderland | "$SERVER" passwd alice --users "$WORK/users" >/dev/null
    start_server --users "$WORK/users"
    echo "server RSS before: $(rss VmRSS)"
    python3 "$HELPER" hoard --port "$PORT" --count "$COUNT" --out "$WORK/hoard.json"
    sleep 1
    echo "server peak RSS after the hoard: $(rss VmHWM)"
    before=$(grep -c "wrong login or password" "$WORK/server.log" || true)
    python3 "$HELPER" guesses --port "$PORT" --count "$COUNT" --source 127.0.0.3 --out "$WORK/guesses.json"
    after=$(grep -c "wrong login or password" "$WORK/server.log" || true)
    echo "guesses hashed: $((after - before)) of $COUNT"
    ;;
*)
    echo "usage: $0 idle [COUNT] [SECONDS] | logins [COUNT]" >&2
    exit 2
    ;;
esac
echo "server log: $(wc -l <"$WORK/server.log") lines, $(wc -c <"$WORK/server.log") bytes"
echo "server peak RSS: $(rss VmHWM)"
