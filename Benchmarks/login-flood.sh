#!/usr/bin/env bash
# Logins under attack, against the release tunnel-server with a users file
# (alice, 210000 iterations, the default):
#   hoard:   COUNT connections from 127.0.0.2, each a wrong login followed at
#            once by 64 data messages of 120 KiB; the server's peak RSS after.
#   guesses: COUNT parallel wrong logins from 127.0.0.3 while alice logs in
#            with the right password from 127.0.0.1; how many guesses were
#            hashed (one "wrong login or password" line each) and how long
#            the right login took.
#
#   Benchmarks/login-flood.sh [COUNT]     (default 200)
#
# Needs: swift, python3. Loopback only (127.0.0.1 to 127.0.0.3).
set -euo pipefail

COUNT=${1:-200}
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
ulimit -n $((COUNT * 4 + 1024))

echo wonderland | "$SERVER" passwd alice --users "$WORK/users" >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SERVER" --port "$PORT" --users "$WORK/users" --state-directory "$WORK/state" --no-ip-layer 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q "listening on" "$WORK/server.log" 2>/dev/null && break
    sleep 0.1
done

echo "server RSS before: $(grep VmRSS "/proc/$SERVER_PID/status" | awk '{print $2, $3}')"
python3 Benchmarks/admission_flood_helper.py hoard --port "$PORT" --count "$COUNT" --out "$WORK/hoard.json"
sleep 1
echo "server peak RSS after the hoard: $(grep VmHWM "/proc/$SERVER_PID/status" | awk '{print $2, $3}')"
before=$(grep -c "wrong login or password" "$WORK/server.log" || true)
python3 Benchmarks/admission_flood_helper.py guesses --port "$PORT" --count "$COUNT" --source 127.0.0.3 --out "$WORK/guesses.json"
after=$(grep -c "wrong login or password" "$WORK/server.log" || true)
echo "guesses hashed: $((after - before)) of $COUNT"
echo "server log: $(wc -l <"$WORK/server.log") lines, $(wc -c <"$WORK/server.log") bytes"
