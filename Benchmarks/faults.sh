#!/usr/bin/env bash
# Faults an operator meets, measured against the built tunnel-server:
#
#   outage   the shared PostgreSQL (--database) stopped for OUTAGE seconds, then
#            started again: how logins are answered meanwhile (result 4, "try again
#            later", and how fast), and the seconds from the database's return to the
#            first accepted login (target: under 5).
#   memory   the server's RSS before, at a peak of TUNNELS tunnels (each with a TCP
#            flow that echoed BYTES), and after they all closed: 5, 15, 30 and 60 s
#            later (target: within 64 MiB of before, within 60 s).
#
#   sudo Benchmarks/faults.sh
#   OUTAGE=30 TUNNELS=2000 BYTES=262144 MEASURE="outage memory" sudo -E Benchmarks/faults.sh
#   BIN=.build/debug ...   run the programs already built there (default: a release build)
#
# Everything runs in a network namespace the script creates and deletes (the
# server and the helper speak over its loopback); PostgreSQL is a throwaway
# cluster (Debian's postgresql, run as the postgres user) on a Unix socket in
# a temporary folder. Needs: root, python3, postgresql, iproute2.
set -euo pipefail

OUTAGE=${OUTAGE:-30}
TUNNELS=${TUNNELS:-2000}
BYTES=${BYTES:-262144}
MEASURE=" ${MEASURE:-outage memory} "
BIN=${BIN:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HELPER="$ROOT/Benchmarks/faults_helper.py"
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

[ "$(id -u)" = 0 ] || { echo "run as root (network namespace, postgres user)" >&2; exit 2; }
PG_VERSION=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
PG=/usr/lib/postgresql/$PG_VERSION/bin
[ -n "$PG_VERSION" ] && [ -x "$PG/initdb" ] || { echo "needs Debian's postgresql: apt-get install postgresql" >&2; exit 2; }
if [ -z "$BIN" ]; then
    swift build -c release --product tunnel-server >&2
    BIN=$(swift build -c release --show-bin-path)
fi
SERVER="$BIN/tunnel-server"
[ -x "$SERVER" ] || { echo "no tunnel-server in $BIN" >&2; exit 2; }

WORK=$(mktemp -d)
chmod 755 "$WORK"
PGDIR="$WORK/pg"
NS="st-faults-$$"
SERVER_PID=""
PEAK_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    [ -n "$PEAK_PID" ] && kill "$PEAK_PID" 2>/dev/null || true
    stop_server
    [ -d "$PGDIR/data" ] && runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
    ip netns delete "$NS" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NS"
ip -n "$NS" link set lo up
in_ns() { ip netns exec "$NS" "$@"; }

start_server() {  # LOG ARGS...: the server on 127.0.0.1:4433 in the namespace, once it listens
    local log="$WORK/$1.log"
    shift
    : >"$log"
    # Not through in_ns: $! must be the server itself (ip netns exec execs it), whose RSS is read.
    ip netns exec "$NS" "$SERVER" serve --port 4433 --no-ip-layer --log-level info --state-directory "$WORK/state" \
        --control "$WORK/server.sock" "$@" 2>"$log" &
    SERVER_PID=$!
    for _ in $(seq 300); do
        grep -q "listening on" "$log" && return
        sleep 0.1
    done
    cat "$log" >&2
    exit 1
}

rss_mib() {
    awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$SERVER_PID/status" 2>/dev/null && return
    echo "the server is gone; its log:" >&2
    tail -20 "$WORK"/memory.log >&2
    exit 1
}

if [[ "$MEASURE" == *" outage "* ]]; then
    mkdir -m 700 "$PGDIR" && chown postgres:postgres "$PGDIR"
    runuser -u postgres -- "$PG/initdb" -D "$PGDIR/data" -A trust -U postgres --no-sync >/dev/null
    pg_start() {
        runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w \
            -o "-k $PGDIR -c listen_addresses='' -p 5432" start >/dev/null
    }
    pg_start
    DATABASE="postgres://postgres@localhost/postgres?host=$PGDIR&port=5432"
    printf '%s\n' "correct horse" | "$SERVER" passwd alice --database "$DATABASE" >/dev/null
    start_server outage --database "$DATABASE"
    login() { in_ns python3 "$HELPER" login --port 4433 --login alice --password "correct horse"; }
    read -r code seconds < <(login)
    [ "$code" = 0 ] || { echo "the first login was not accepted (result $code)" >&2; exit 1; }

    log "stopping PostgreSQL for $OUTAGE s"
    runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null
    stopped=$(date +%s)
    answers=()
    while [ $(( $(date +%s) - stopped )) -lt "$OUTAGE" ]; do
        answers+=("$(login)")
        sleep 1
    done
    pg_start
    log "PostgreSQL is back"
    recovery=$(in_ns python3 "$HELPER" recover --port 4433 --login alice --password "correct horse" --limit 120)
    stop_server
    printf '%s\n' "${answers[@]}" | python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin if line.strip()]
codes = sorted({row[0] for row in rows})
later = [float(row[1]) for row in rows[1:]]
print("outage: %d logins during %s s, results %s (4: try again later); the first took %.2f s, the rest %.2f s at most" % (
    len(rows), sys.argv[1], "/".join(codes), float(rows[0][1]), max(later) if later else 0))
' "$OUTAGE"
    echo "outage: a login accepted $recovery s after PostgreSQL was back (target: under 5)"
    grep -E "database (outage|is still away)|answers again" "$WORK/outage.log" | head -5 >&2 || true
fi

if [[ "$MEASURE" == *" memory "* ]]; then
    start_server memory --max-tunnels $(( TUNNELS + 100 ))
    sleep 2
    before=$(rss_mib)
    log "opening $TUNNELS tunnels, each echoing $BYTES bytes"
    exec 3> >(in_ns python3 "$HELPER" peak --port 4433 --tunnels "$TUNNELS" --bytes "$BYTES" >"$WORK/peak.out")
    PEAK_PID=$!
    for _ in $(seq 1200); do
        grep -q "^open" "$WORK/peak.out" 2>/dev/null && break
        sleep 0.5
    done
    peak=$(rss_mib)
    opened=$(cat "$WORK/peak.out")
    echo >&3
    exec 3>&-
    closed=$(date +%s)
    after=""
    for at in 5 15 30 60; do
        while [ $(( $(date +%s) - closed )) -lt "$at" ]; do sleep 0.5; done
        after="$after ${at}s=$(rss_mib)"
    done
    echo "memory: RSS before $before MiB, at the peak ($opened) $peak MiB, after closing:$after MiB (target: within 64 MiB of before)"
    grep -E "freed memory given back" "$WORK/memory.log" | tail -3 >&2 || true
    stop_server
fi
