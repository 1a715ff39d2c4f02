#!/usr/bin/env bash
# Logins and tunnel setups per second with the shared PostgreSQL database
# (--database) beside the users file and lease file, against the release
# tunnel-server, printed side by side.
#
#   sudo Benchmarks/database-logins.sh [COUNT] [CONCURRENCY] [ITERATIONS]
#     (defaults: 200 clients, 8 at a time, 210000 PBKDF2 iterations as passwd writes)
#
# logins:  TLS, authenticate, close; each client its own login.
# tunnels: the same, then an IP flow opened and its lease answered.
# Each mode runs once against a fresh server per store. The server runs in a
# network namespace the script creates (its TUN device stays there) and the
# helper connects to 127.0.0.1 inside it; PostgreSQL is a throwaway cluster
# (Debian's postgresql 15, run as the postgres user) reached over its Unix
# socket. Needs: root, swift, python3, postgresql, iproute2.
set -euo pipefail

COUNT=${1:-200}
CONCURRENCY=${2:-8}
ITERATIONS=${3:-210000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PG=/usr/lib/postgresql/15/bin
[ "$(id -u)" = 0 ] || { echo "run as root (network namespace, TUN device, postgres user)" >&2; exit 2; }
[ -x "$PG/initdb" ] || { echo "needs Debian's postgresql 15: apt-get install postgresql" >&2; exit 2; }

swift build -c release --product tunnel-server >&2
SERVER="$(swift build -c release --show-bin-path)/tunnel-server"
HELPER=Benchmarks/database_logins_helper.py

WORK=$(mktemp -d)
chmod 755 "$WORK"
PGDIR="$WORK/pg"
NS="st-bench-db-$$"
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    stop_server
    [ -d "$PGDIR/data" ] && runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
    ip netns delete "$NS" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NS"
ip -n "$NS" link set lo up
mkdir -m 700 "$PGDIR" && chown postgres:postgres "$PGDIR"
runuser -u postgres -- "$PG/initdb" -D "$PGDIR/data" -A trust -U postgres --no-sync >/dev/null
runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w \
    -o "-k $PGDIR -c listen_addresses='' -p 5432 -c max_connections=100" start >/dev/null
DATABASE="postgres://postgres@localhost/postgres?host=$PGDIR&port=5432"

echo "making $COUNT logins ($ITERATIONS iterations)..." >&2
python3 "$HELPER" users --count "$COUNT" --iterations "$ITERATIONS" --users-file "$WORK/users" --sql-file "$WORK/users.sql"
echo "setup-only" | "$SERVER" passwd setup-only --database "$DATABASE" >/dev/null  # creates the schema
runuser -u postgres -- psql -q -h "$PGDIR" -p 5432 -U postgres -f "$WORK/users.sql" postgres >/dev/null

start_server() {
    local log="$WORK/server-$1.log"
    shift
    : >"$log"
    ip netns exec "$NS" "$SERVER" --port 4433 --tun stun0 --max-tunnels 1024 --log-level notice \
        --state-directory "$WORK/state" "$@" 2>"$log" &
    SERVER_PID=$!
    for _ in $(seq 200); do
        grep -q "listening on" "$log" && return
        sleep 0.1
    done
    cat "$log" >&2
    exit 1
}

measure() {  # store mode -> "per_second (failures)"
    local store=$1 mode=$2
    if [ "$store" = files ]; then
        rm -f "$WORK/state/leases.json"
        start_server "$store-$mode" --users "$WORK/users"
    else
        runuser -u postgres -- psql -q -h "$PGDIR" -p 5432 -U postgres -c "DELETE FROM simpletunnel_leases; DELETE FROM simpletunnel_sessions" postgres
        start_server "$store-$mode" --database "$DATABASE"
    fi
    ip netns exec "$NS" python3 "$HELPER" run --port 4433 --count "$COUNT" --concurrency "$CONCURRENCY" --mode "$mode" \
        | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%s/s (%d failed)" % (r["per_second"], r["failures"]))'
    stop_server
}

printf '%-8s %-24s %-24s\n' "" "files" "database"
for mode in logins tunnels; do
    printf '%-8s %-24s %-24s\n' "$mode" "$(measure files "$mode")" "$(measure database "$mode")"
done
