#!/usr/bin/env bash
# App-layer benchmark. On loopback, the same payload through
#   direct   iperf3 / the echo server straight to the destination
#   ours     tunnel-client forward -L  ->  TLS tunnel  ->  tunnel-server
#   ssh      ssh -N -L (default cipher, -F /dev/null) to a private sshd on 127.0.0.1
#   stunnel  stunnel client -> TLS -> stunnel server (throwaway P-256 self-signed cert)
#   relay    Benchmarks/RelayFloor: the smallest SwiftNIO forwarder (one process, no TLS, no
#            tunnel, a connection to the target per accepted one): the most any forwarder
#            built on SwiftNIO reaches here, which shows how far a target is within reach
# and four figures for each:
#   1-flow   iperf3 -t DURATION, Gbit/s (receiver)
#   16-flow  iperf3 -t DURATION -P 16, Gbit/s (receiver)
#   flows/s  connect, send 64 bytes, read the echo, close; FLOWS times, sequentially
#            and with CONCURRENCY threads (Benchmarks/app_layer_helper.py flow-rate)
#   KiB per idle flow   VmRSS growth of the forwarding processes (server side + client
#            side, process trees) when IDLE flows are open and idle, each after one
#            round trip; measured first in every round, on freshly started processes
#            after a 20-flow warm-up
# Targets (ours against ssh -L): 1-flow >= 1.5x, flows/s >= 2x, <= 16 KiB per idle flow.
#
# Every measurement is repeated RUNS times ("rounds"; all four setups are restarted each
# round and the setups are interleaved per measurement); the table shows medians.
#
# Usage:
#   Benchmarks/app-layer.sh
#   DURATION=5 FLOWS=2000 FLOW_SECONDS=5 RUNS=5 IDLE=1000 CONCURRENCY=8 Benchmarks/app-layer.sh
#   SKIP_BUILD=1 ...   use the release binaries already built
#   OURS_BIN=DIR ...   run tunnel-server and tunnel-client from DIR instead (implies SKIP_BUILD=1),
#            e.g. a saved build to compare before and after in the same conditions
#   FLOW_GENERATOR=c ...   flows/s measured by Benchmarks/flow_rate.c (built with cc) instead of the
#            Python helper: the same flow, with less CPU taken from the processes measured; the
#            same generator serves every setup either way
#   OURS_SERVER_ARGS="--log-level notice" OURS_CLIENT_ARGS=...   extra flags for our two programs
#   MEASURE="tp1" ...   only these measurements (any of idle tp1 tp16 fps; default all four); the
#            others show as missing in the table
# A flows/s test stops after FLOWS flows or FLOW_SECONDS seconds, whichever comes first.
# Output: a table on stdout (progress on stderr), benchmark-results/app-layer.json, and
# every process's log in benchmark-results/app-layer-logs/ (git-ignored).
# Defaults (DURATION=4 FLOWS=1000 FLOW_SECONDS=5 RUNS=3 IDLE=1000 CONCURRENCY=8) take about
# 3.5 minutes on an otherwise idle machine (5-6 when other work shares the cores).
#
# Installs what it needs if missing (apt-get: iperf3 openssh-server openssh-client stunnel4).
# Traffic goes to 127.0.0.1 only. Every process started here is stopped on exit and the
# temporary directory is removed. Run as root (sshd needs it to log a user in).
set -euo pipefail

DURATION=${DURATION:-4}
FLOWS=${FLOWS:-1000}
RUNS=${RUNS:-3}
IDLE=${IDLE:-1000}
CONCURRENCY=${CONCURRENCY:-8}
FLOW_SECONDS=${FLOW_SECONDS:-5}
OURS_SERVER_ARGS=${OURS_SERVER_ARGS:-}
OURS_CLIENT_ARGS=${OURS_CLIENT_ARGS:-}
SKIP_BUILD=${SKIP_BUILD:-0}
OURS_BIN=${OURS_BIN:-}
[ -z "$OURS_BIN" ] || SKIP_BUILD=1
FLOW_GENERATOR=${FLOW_GENERATOR:-python}
MEASURE=${MEASURE:-idle tp1 tp16 fps}
MEASURE=" ${MEASURE//,/ } "
measuring() { [[ "$MEASURE" == *" $1 "* ]]; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HELPER="$ROOT/Benchmarks/app_layer_helper.py"
# shellcheck source=Benchmarks/bench-files.sh
. "$ROOT/Benchmarks/bench-files.sh"
OUT_JSON="$ROOT/benchmark-results/app-layer.json"
LOG_COPY="$ROOT/benchmark-results/app-layer-logs"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# ---------------------------------------------------------------- dependencies
need_install=0
for cmd in iperf3 ssh ssh-keygen openssl ss python3; do
    command -v "$cmd" >/dev/null 2>&1 || need_install=1
done
[ -x /usr/sbin/sshd ] || need_install=1
command -v stunnel4 >/dev/null 2>&1 || command -v stunnel >/dev/null 2>&1 || need_install=1
if [ "$need_install" = 1 ]; then
    log "installing iperf3 openssh-server openssh-client stunnel4"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq iperf3 openssh-server openssh-client stunnel4 iproute2 >&2
fi
STUNNEL=$(command -v stunnel4 || command -v stunnel)
SSHD=/usr/sbin/sshd

# ---------------------------------------------------------------------- build
if [ "$SKIP_BUILD" != 1 ]; then
    log "building release binaries"
    swift build -c release --product tunnel-server >&2
    swift build -c release --product tunnel-client >&2
    swift build -c release --product RelayFloor >&2
fi
BIN=${OURS_BIN:-$(swift build -c release --show-bin-path)}
[ -x "$BIN/tunnel-server" ] && [ -x "$BIN/tunnel-client" ] || die "no release binaries in $BIN"
RELAY_FLOOR="$(swift build -c release --show-bin-path)/RelayFloor"
[ -x "$RELAY_FLOOR" ] || die "no $RELAY_FLOOR: swift build -c release --product RelayFloor"

# 1000 idle flows hold ~4 descriptors each across the helper, forwarders and sink.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 8192 ]; then
    ulimit -n 8192 || die "cannot raise the descriptor limit to 8192 (ulimit -n)"
fi

# ------------------------------------------------------------ processes, cleanup
TMP=$(mktemp -d /tmp/app-layer-bench.XXXXXX)
ALL_PIDS=()      # everything started and not yet reaped, stopped on exit
ROUND_PIDS=()    # the forwarders of the current round, stopped after it

kill_tree() {    # kill_tree SIGNAL PID: the process and its descendants, by id
    local sig=$1 pid=$2 child
    for child in $(pgrep -P "$pid" 2>/dev/null || true); do kill_tree "$sig" "$child"; done
    kill "-$sig" "$pid" 2>/dev/null || true
}

forget() {       # forget PID...: no longer ours once reaped (the id may be reused)
    local p keep=()
    for p in "${ALL_PIDS[@]}"; do [[ " $* " == *" $p "* ]] || keep+=("$p"); done
    ALL_PIDS=("${keep[@]}")
}

stop_pids() {    # TERM, up to 5 s, then KILL with descendants; only processes still in ALL_PIDS
    local pid deadline live=()
    for pid in "$@"; do [[ " ${ALL_PIDS[*]} " == *" $pid "* ]] && live+=("$pid"); done
    set -- "${live[@]}"
    [ $# -gt 0 ] || return 0
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    deadline=$((SECONDS + 5))
    for pid in "$@"; do
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            log "process $pid did not stop on SIGTERM within 5 s; killing it"
            kill_tree KILL "$pid"
        fi
        wait "$pid" 2>/dev/null || true
    done
    forget "$@"
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_pids "${ALL_PIDS[@]}"
    if [ -d "$TMP/logs" ]; then   # keep the logs (benchmark-results/ is git-ignored)
        rm -rf "$LOG_COPY"; mkdir -p "$LOG_COPY" && cp -r "$TMP/logs/." "$LOG_COPY/" 2>/dev/null || true
    fi
    rm -rf "$TMP"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() {        # start LOGFILE CMD...: background, pid in $LAST_PID
    local logfile=$1; shift
    "$@" >"$logfile" 2>&1 &
    LAST_PID=$!
    ALL_PIDS+=("$LAST_PID")
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_listen() {  # wait_listen PORT PID WHAT: until 127.0.0.1:PORT is in LISTEN (no connection made)
    local port=$1 pid=$2 what=$3 i
    for i in $(seq 1 200); do
        if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then return 0; fi
        kill -0 "$pid" 2>/dev/null || die "$what exited before listening on $port"
        sleep 0.1
    done
    die "$what is not listening on $port after 20 s"
}

case $FLOW_GENERATOR in
    python) ;;
    c)
        command -v cc >/dev/null 2>&1 || die "FLOW_GENERATOR=c needs a C compiler (cc)"
        cc -O2 -pthread -o "$TMP/flow-rate" "$ROOT/Benchmarks/flow_rate.c" || die "cannot build Benchmarks/flow_rate.c"
        ;;
    *) die "FLOW_GENERATOR must be python or c, not $FLOW_GENERATOR" ;;
esac

# ------------------------------------------------------------ destinations
mkdir -p "$TMP/logs" "$TMP/state" "$TMP/ssh" "$TMP/stunnel"
RESULTS="$TMP/results.jsonl"
: >"$RESULTS"

IPERF_PORT=$(free_port)
start_iperf_server() {
    start "$TMP/logs/iperf3-server.log" iperf3 -s -B 127.0.0.1 -p "$IPERF_PORT"
    IPERF_PID=$LAST_PID
    wait_listen "$IPERF_PORT" "$IPERF_PID" "iperf3 -s"
}
start_iperf_server

start "$TMP/logs/echo.log" python3 "$HELPER" echo-server --port-file "$TMP/echo.port"
ECHO_PID=$LAST_PID
for _ in $(seq 1 100); do [ -s "$TMP/echo.port" ] && break; sleep 0.1; done
[ -s "$TMP/echo.port" ] || die "echo server did not start"
ECHO_PORT=$(cat "$TMP/echo.port")

# ------------------------------------------------------------ one-time material
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$TMP/stunnel/key.pem" -out "$TMP/stunnel/cert.pem" -subj /CN=localhost -days 1 2>/dev/null
make_ssh_keys "$TMP/ssh"
SSH_USER=$(id -un)
SSH_OPTS=(-F /dev/null -i "$TMP/ssh/client_key" -o IdentitiesOnly=yes -o IdentityAgent=none
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR)

# ------------------------------------------------------------ the forwarders, per round
# Each setup exposes two local ports: *_TP (-> iperf3) and *_ECHO (-> echo server).
DIRECT_TP=$IPERF_PORT
DIRECT_ECHO=$ECHO_PORT

# shellcheck disable=SC2086  # OURS_*_ARGS split on purpose
start_ours() {
    local round=$1 port fp
    start "$TMP/logs/ours-server-$round.log" "$BIN/tunnel-server" --port 0 --no-ip-layer --state-directory "$TMP/state" $OURS_SERVER_ARGS
    OURS_SERVER_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    for _ in $(seq 1 200); do
        grep -q 'listening on' "$TMP/logs/ours-server-$round.log" && grep -q 'SHA-256' "$TMP/logs/ours-server-$round.log" && break
        kill -0 "$OURS_SERVER_PID" 2>/dev/null || { cat "$TMP/logs/ours-server-$round.log" >&2; die "tunnel-server exited"; }
        sleep 0.1
    done
    port=$(server_port "$TMP/logs/ours-server-$round.log")
    fp=$(server_fingerprint "$TMP/logs/ours-server-$round.log")
    [ -n "$port" ] && [ -n "$fp" ] || { cat "$TMP/logs/ours-server-$round.log" >&2; die "no port or fingerprint in the tunnel-server log"; }
    OURS_TP=$(free_port); OURS_ECHO=$(free_port)
    start "$TMP/logs/ours-client-$round.log" "$BIN/tunnel-client" forward --server "127.0.0.1:$port" --pin-sha256 "$fp" $OURS_CLIENT_ARGS \
        -L "127.0.0.1:$OURS_TP:127.0.0.1:$IPERF_PORT" -L "127.0.0.1:$OURS_ECHO:127.0.0.1:$ECHO_PORT"
    OURS_CLIENT_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    wait_listen "$OURS_TP" "$OURS_CLIENT_PID" "tunnel-client forward"
    wait_listen "$OURS_ECHO" "$OURS_CLIENT_PID" "tunnel-client forward"
    # The client binds its ports before it connects: wait for the tunnel too.
    for _ in $(seq 1 200); do
        grep -q 'tunnel up' "$TMP/logs/ours-client-$round.log" && break
        kill -0 "$OURS_CLIENT_PID" 2>/dev/null || die "tunnel-client forward exited before its tunnel was up"
        sleep 0.1
    done
    grep -q 'tunnel up' "$TMP/logs/ours-client-$round.log" || die "tunnel-client forward: no tunnel after 20 s"
}

SSH_CIPHER=unknown
start_ssh() {
    local round=$1 sshport
    sshport=$(free_port)
    write_sshd_config "$TMP/ssh/sshd_config" "$sshport" 127.0.0.1 "$TMP/ssh"
    start "$TMP/logs/sshd-$round.log" "$SSHD" -f "$TMP/ssh/sshd_config" -D -e
    SSHD_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    wait_listen "$sshport" "$SSHD_PID" "sshd"
    if [ "$SSH_CIPHER" = unknown ]; then
        timeout 20 ssh -v "${SSH_OPTS[@]}" -p "$sshport" "$SSH_USER@127.0.0.1" true >"$TMP/logs/ssh-probe.log" 2>&1 || true
        SSH_CIPHER=$(python3 "$HELPER" ssh-cipher "$TMP/logs/ssh-probe.log")
    fi
    SSH_TP=$(free_port); SSH_ECHO=$(free_port)
    start "$TMP/logs/ssh-$round.log" ssh -N "${SSH_OPTS[@]}" -o ExitOnForwardFailure=yes -p "$sshport" \
        -L "127.0.0.1:$SSH_TP:127.0.0.1:$IPERF_PORT" -L "127.0.0.1:$SSH_ECHO:127.0.0.1:$ECHO_PORT" "$SSH_USER@127.0.0.1"
    SSH_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    wait_listen "$SSH_TP" "$SSH_PID" "ssh -N -L"
    wait_listen "$SSH_ECHO" "$SSH_PID" "ssh -N -L"
}

start_relay() {
    RELAY_TP=$(free_port); RELAY_ECHO=$(free_port)
    start "$TMP/logs/relay-$1.log" "$RELAY_FLOOR" "$RELAY_TP:$IPERF_PORT" "$RELAY_ECHO:$ECHO_PORT"
    RELAY_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    wait_listen "$RELAY_TP" "$RELAY_PID" "RelayFloor"
    wait_listen "$RELAY_ECHO" "$RELAY_PID" "RelayFloor"
}

STUNNEL_TLS=unknown
start_stunnel() {
    local round=$1 s_tp s_echo
    s_tp=$(free_port); s_echo=$(free_port); STUNNEL_TP=$(free_port); STUNNEL_ECHO=$(free_port)
    cat >"$TMP/stunnel/server.conf" <<CONF
foreground = yes
pid = $TMP/stunnel/server.pid
cert = $TMP/stunnel/cert.pem
key = $TMP/stunnel/key.pem
[tp]
accept = 127.0.0.1:$s_tp
connect = 127.0.0.1:$IPERF_PORT
[echo]
accept = 127.0.0.1:$s_echo
connect = 127.0.0.1:$ECHO_PORT
CONF
    cat >"$TMP/stunnel/client.conf" <<CONF
foreground = yes
pid = $TMP/stunnel/client.pid
client = yes
[tp]
accept = 127.0.0.1:$STUNNEL_TP
connect = 127.0.0.1:$s_tp
[echo]
accept = 127.0.0.1:$STUNNEL_ECHO
connect = 127.0.0.1:$s_echo
CONF
    start "$TMP/logs/stunnel-server-$round.log" "$STUNNEL" "$TMP/stunnel/server.conf"
    STUNNEL_SERVER_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    start "$TMP/logs/stunnel-client-$round.log" "$STUNNEL" "$TMP/stunnel/client.conf"
    STUNNEL_CLIENT_PID=$LAST_PID; ROUND_PIDS+=("$LAST_PID")
    wait_listen "$s_tp" "$STUNNEL_SERVER_PID" "stunnel server"
    wait_listen "$s_echo" "$STUNNEL_SERVER_PID" "stunnel server"
    wait_listen "$STUNNEL_TP" "$STUNNEL_CLIENT_PID" "stunnel client"
    wait_listen "$STUNNEL_ECHO" "$STUNNEL_CLIENT_PID" "stunnel client"
    if [ "$STUNNEL_TLS" = unknown ]; then   # what an OpenSSL-default client (like stunnel's) negotiates
        STUNNEL_TLS=$(timeout 10 openssl s_client -connect "127.0.0.1:$s_echo" -brief </dev/null 2>&1 \
            | awk -F': *' '/^Protocol version/ { p = $2 } /^Ciphersuite/ { c = $2 } END { print (p ? p : "?") " " (c ? c : "?") }' || true)
    fi
}

stop_round() {
    # Clients first, as a user would (and so that sshd's session processes end with ssh).
    stop_pids "$SSH_PID" "$OURS_CLIENT_PID" "$STUNNEL_CLIENT_PID"
    for _ in $(seq 1 30); do pgrep -P "$SSHD_PID" >/dev/null 2>&1 || break; sleep 0.1; done
    if pgrep -P "$SSHD_PID" >/dev/null 2>&1; then kill_tree TERM "$SSHD_PID"; fi
    stop_pids "${ROUND_PIDS[@]}"
    ROUND_PIDS=()
}

# ------------------------------------------------------------ measurements
record() {       # record ROUND SETUP METRIC JSON
    printf '{"round": %s, "setup": "%s", "metric": "%s", "result": %s}\n' "$1" "$2" "$3" "$4" >>"$RESULTS"
    log "round $1 $2 $3: $4"
}

measure_iperf() { # measure_iperf ROUND SETUP METRIC PORT STREAMS
    local round=$1 setup=$2 metric=$3 port=$4 streams=$5 result
    timeout $((DURATION + 30)) iperf3 -c 127.0.0.1 -p "$port" -t "$DURATION" -P "$streams" -J --connect-timeout 5000 \
        >"$TMP/iperf.json" 2>>"$TMP/logs/iperf3-client.log" || true
    result=$(python3 "$HELPER" iperf --json "$TMP/iperf.json")
    cp "$TMP/iperf.json" "$TMP/logs/iperf-$round-$setup-$metric.json"
    record "$round" "$setup" "$metric" "$result"
    if [[ "$result" == *'"error"'* ]]; then   # a failed test can leave iperf3 -s busy: restart it
        stop_pids "$IPERF_PID"
        start_iperf_server
    fi
}

measure_flows() { # measure_flows ROUND SETUP METRIC PORT CONCURRENCY
    local result
    if [ "$FLOW_GENERATOR" = c ]; then
        result=$(timeout 120 "$TMP/flow-rate" "$4" "$FLOWS" "$5" "$FLOW_SECONDS" \
            || echo '{"error": "flow-rate generator failed or timed out"}')
    else
        result=$(timeout 120 python3 "$HELPER" flow-rate --port "$4" --flows "$FLOWS" --concurrency "$5" --max-seconds "$FLOW_SECONDS" \
            || echo '{"error": "flow-rate helper failed or timed out"}')
    fi
    record "$1" "$2" "$3" "$result"
}

measure_idle() {  # measure_idle ROUND SETUP PORT "SERVER PIDS" "CLIENT PIDS"
    local result
        result=$(timeout 180 python3 "$HELPER" idle-flows --port "$3" --count "$IDLE" --server-tree $4 --client-tree $5 \
        || echo '{"error": "idle-flows helper failed or timed out"}')
    record "$1" "$2" idle "$result"
    sleep 1   # let the closes drain before the next measurement
}

log "2-core machine shared by client, server, load generator and sink: expect noise; medians of $RUNS rounds"
log "flows/s generator: $FLOW_GENERATOR"
log "iperf3 on 127.0.0.1:$IPERF_PORT, echo server on 127.0.0.1:$ECHO_PORT, temp $TMP"
for round in $(seq 1 "$RUNS"); do
    log "round $round/$RUNS: starting forwarders"
    start_ours "$round"
    start_ssh "$round"
    start_stunnel "$round"
    start_relay "$round"

    if measuring idle; then
        measure_idle "$round" ours "$OURS_ECHO" "$OURS_SERVER_PID" "$OURS_CLIENT_PID"
        measure_idle "$round" ssh "$SSH_ECHO" "$SSHD_PID" "$SSH_PID"
        measure_idle "$round" stunnel "$STUNNEL_ECHO" "$STUNNEL_SERVER_PID" "$STUNNEL_CLIENT_PID"
    fi

    for setup in direct ours ssh stunnel relay; do
        measuring tp1 || break
        case $setup in
            direct) tp=$DIRECT_TP ;; ours) tp=$OURS_TP ;; ssh) tp=$SSH_TP ;; stunnel) tp=$STUNNEL_TP ;; relay) tp=$RELAY_TP ;;
        esac
        measure_iperf "$round" "$setup" tp1 "$tp" 1
    done
    for setup in direct ours ssh stunnel relay; do
        measuring tp16 || break
        case $setup in
            direct) tp=$DIRECT_TP ;; ours) tp=$OURS_TP ;; ssh) tp=$SSH_TP ;; stunnel) tp=$STUNNEL_TP ;; relay) tp=$RELAY_TP ;;
        esac
        measure_iperf "$round" "$setup" tp16 "$tp" 16
    done
    for setup in direct ours ssh stunnel relay; do
        measuring fps || break
        case $setup in
            direct) echo_port=$DIRECT_ECHO ;; ours) echo_port=$OURS_ECHO ;; ssh) echo_port=$SSH_ECHO ;; stunnel) echo_port=$STUNNEL_ECHO ;;
            relay) echo_port=$RELAY_ECHO ;;
        esac
        measure_flows "$round" "$setup" fps1 "$echo_port" 1
        measure_flows "$round" "$setup" fpsC "$echo_port" "$CONCURRENCY"
    done

    for pid in "$OURS_SERVER_PID" "$OURS_CLIENT_PID" "$SSHD_PID" "$SSH_PID" "$STUNNEL_SERVER_PID" "$STUNNEL_CLIENT_PID" "$RELAY_PID"; do
        kill -0 "$pid" 2>/dev/null || log "WARNING: process $pid died during round $round"
    done
    stop_round
done

# ------------------------------------------------------------ our logs
log "our processes' logs: lines above info level other than start-up and shutdown"
for f in "$TMP"/logs/ours-*.log; do
    n=$(grep -cE ' (warning|error|critical) ' "$f" || true)
    odd=$(grep -E ' (notice|warning|error|critical) ' "$f" \
        | grep -vE 'listening on|self-signed certificate|connect with:|tunnel up|forwarding .* through the tunnel|shutting down|Shutting down|Received signal|graceful' || true)
    if [ -n "$odd" ] || [ "$n" != 0 ]; then
        log "$(basename "$f"): $n warning/error/critical line(s); first notable lines:"
        printf '%s\n' "$odd" | head -5 >&2
    fi
done

python3 "$HELPER" report --results "$RESULTS" --json-out "$OUT_JSON" --runs "$RUNS" --duration "$DURATION" \
    --flows "$FLOWS" --flow-seconds "$FLOW_SECONDS" --concurrency "$CONCURRENCY" --idle "$IDLE" --ssh-cipher "$SSH_CIPHER" \
    --stunnel-tls "$STUNNEL_TLS (as an OpenSSL-default client negotiates)" \
    --ours-tls "TLS 1.3, client offers TLS_AES_128_GCM_SHA256 first" --flow-generator "$FLOW_GENERATOR"
