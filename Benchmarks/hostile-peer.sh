#!/usr/bin/env bash
# What a hostile client costs the release tunnel-server: its resident memory
# and open descriptors before, at their peak during, and after each of these
# (Benchmarks/hostile_peer_helper.py), one tunnel each, all on loopback:
#   ignore-suspend  8 flows to a destination that never reads, data sent nonstop
#                   whatever the server says (it closes such flows past their
#                   suspend allowance)
#   open-flood      as many flows as the server takes, no data
#   never-read      64 flows to destinations that send without end, and the
#                   tunnel is never read (the tunnel's buffer budget holds)
#   close-unread    400 flows to a destination that never reads, 1 MiB each,
#                   closed at once (their sockets drain for --flow-drain-timeout,
#                   here 5 s, then are reset)
# Each figure is the server's whole process: compare the peak with the
# budgets in the README ("Limits and hardening").
#
# Usage: Benchmarks/hostile-peer.sh [SECONDS]   (each scenario's length, default 8)
#   SKIP_BUILD=1   use the release binary already built
#   OURS_BIN=DIR   run tunnel-server from DIR (implies SKIP_BUILD=1)
#   SCENARIOS="ignore-suspend open-flood never-read close-unread"
# Needs: swift, python3.
set -euo pipefail

SECONDS_EACH=${1:-8}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ -n "${OURS_BIN:-}" ]; then
    SERVER="$OURS_BIN/tunnel-server"
else
    [ -n "${SKIP_BUILD:-}" ] || swift build -c release --product tunnel-server >&2
    SERVER="$(swift build -c release --show-bin-path)/tunnel-server"
fi
[ -x "$SERVER" ] || { echo "no tunnel-server at $SERVER" >&2; exit 1; }

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$SERVER" --port 0 --no-ip-layer --state-directory "$WORK" --flow-drain-timeout 5 --log-level notice 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    grep -q "listening on 127.0.0.1:" "$WORK/server.log" && break
    sleep 0.1
done
PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/server.log" | head -1)
[ -n "$PORT" ] || { cat "$WORK/server.log" >&2; echo "tunnel-server did not start" >&2; exit 1; }

# shellcheck disable=SC2086  # the scenario list splits on purpose
RESULT=$(python3 Benchmarks/hostile_peer_helper.py --port "$PORT" --pid "$SERVER_PID" --seconds "$SECONDS_EACH" ${SCENARIOS:-})
mkdir -p benchmark-results
echo "$RESULT" >benchmark-results/hostile-peer.json
python3 - "$RESULT" <<'PY'
import json, sys
rows = json.loads(sys.argv[1])
print(f"{'scenario':16} {'RSS MiB before':>15} {'peak':>7} {'after':>7} {'fds before':>11} {'peak':>6} {'after':>6}  detail")
for r in rows:
    detail = {k: v for k, v in r.items() if not k.startswith(("rss_", "fds_", "scenario"))}
    print(f"{r['scenario']:16} {r['rss_kib_before']/1024:15.1f} {r['rss_kib_peak']/1024:7.1f} {r['rss_kib_after']/1024:7.1f}"
          f" {r['fds_before']:11} {r['fds_peak']:6} {r['fds_after']:6}  {detail}")
PY
echo "server log: $(wc -l <"$WORK/server.log") lines, $(wc -c <"$WORK/server.log") bytes"
grep -o "closing flow.*reason=[^[]*\|buffer budget reached[^[]*" "$WORK/server.log" | sort | uniq -c | sort -rn | head -5 || true
