#!/usr/bin/env bash
# Latency under load: does an interactive flow inside a tunnel keep answering promptly
# while a bulk download shares the tunnel, on a link slower than the machine?
#
# Two network namespaces (client side, server side) joined by one veth, shaped on both
# ends with `tc ... tbf rate $RATE burst 32kbit latency 50ms` (so the link, not the CPU,
# is the bottleneck and its queue holds at most ~50 ms). The server side runs a TCP echo
# server, iperf3 -s, tunnel-server (TLS, generated certificate pinned by the client,
# client certificate from a throwaway CA since it listens beyond loopback), and sshd.
# Setups, each carrying both flows (the echo flow and the download) the way a user would:
#   direct   straight to the server's veth address, no tunnel
#   ours     one `tunnel-client forward` with two -L forwards (iperf3 and echo on the
#            server's loopback), i.e. both flows multiplexed in one TLS connection
#   ssh      one `ssh -N` with the same two -L forwards
#   ip       `tunnel-client ip` (TUN): the echo server and iperf3 at the server's tunnel address
# Scenarios, for each setup:
#   idle     echo probes alone
#   before   echo flow opened (and answering) before `iperf3 -R` starts, probed during it
#   during   `iperf3 -R` first; the echo flow is opened OPEN_AT seconds into the download
# The probe (Benchmarks/latency_probe.py) sends 64 bytes every INTERVAL_MS and matches
# answers by sequence number; a probe not answered within PROBE_TIMEOUT seconds counts
# as "no answer" and, in p50/p95/max, as infinitely late (shown as >TIMEOUT). So a
# stalled flow shows as a count and a p95 of >TIMEOUT, and never hangs the script.
#
# How to read it: "direct" is the floor (the tbf queue, up to ~50 ms, plus what TCP keeps
# in flight). A tunnel adds whatever sits between its scheduler and the wire: the tunnel
# socket's unsent bytes (kernel send buffer), bytes in flight, and the program's own
# buffers. p95 under load relative to ssh and direct is the figure that matters; the
# download's throughput shows the tunnel still fills the link. During each download the
# script snapshots `ss -tin` of the sender's socket (server side) and the tbf backlog:
# the "where" lines say how many bytes were unsent in the kernel (notsent), in flight
# (unacked x MSS) and queued in tbf at that moment; for ours, the "program" line adds
# what tunnel-server's status said then of its own queues in front of the link: the
# flows' queues (a stream's data and an IP flow's packets waiting for a turn), a flow's turn, TLS plaintext, ciphertext in the channel, and the room its measured
# rate allowed.
#
# Usage (root: namespaces, tc, sshd, TUN):
#   Benchmarks/latency-under-load.sh                 10, 40 and 200 Mbit/s, one table each
#   RATE=10mbit DURATION=15 Benchmarks/latency-under-load.sh
# Options (environment):
#   RATES="10mbit 40mbit 200mbit"   the links measured, one after the other, each in new
#                        namespaces with its own table: a phone's LTE or café Wi-Fi, and a
#                        fast link where the tunnel's own buffers must not be what limits it
#   RATE=                one tbf rate on each end instead (e.g. 40mbit)
#   DURATION=12          seconds of each download
#   IDLE_SECONDS=5       seconds of idle probing
#   OPEN_AT=3            seconds into the download when the "during" echo flow opens
#   INTERVAL_MS=30       probe interval
#   PROBE_TIMEOUT=2      seconds an answer (and a connect) may take
#   CC=                  congestion control for both namespaces (one the host allows:
#                        net.ipv4.tcp_allowed_congestion_control); empty keeps what new
#                        namespaces get (the host's default); the one in use is printed
#   SETUPS="direct ours ssh ip"   which setups to run
#   SKIP_BUILD=1         use the release binaries already built
#   OURS_BIN=DIR         tunnel-server and tunnel-client from DIR (implies SKIP_BUILD=1)
#   OURS_SERVER_ARGS=, OURS_CLIENT_ARGS=   extra flags for our two programs
#   TAG=                 suffix for the result files, e.g. TAG=baseline
# Output: the table on stdout (progress on stderr); benchmark-results/latency-under-load-RATE[-TAG].json
# and every process's log plus the ss/tc snapshots in benchmark-results/latency-under-load-logs/
# (git-ignored). Takes about 4 minutes per rate with the defaults (plus the build).
#
# Needs (it installs nothing): iperf3, openssh-server, openssh-client, iproute2, openssl,
# python3, coreutils. Traffic stays inside the two namespaces, which are deleted on exit
# (also on Ctrl-C) together with every process started here.
set -euo pipefail

RATES=${RATES:-10mbit 40mbit 200mbit}
RATE=${RATE:-}
DURATION=${DURATION:-12}
IDLE_SECONDS=${IDLE_SECONDS:-5}
OPEN_AT=${OPEN_AT:-3}
INTERVAL_MS=${INTERVAL_MS:-30}
PROBE_TIMEOUT=${PROBE_TIMEOUT:-2}
CC=${CC:-}
SETUPS=${SETUPS:-direct ours ssh ip}
SKIP_BUILD=${SKIP_BUILD:-0}
OURS_BIN=${OURS_BIN:-}
[ -z "$OURS_BIN" ] || SKIP_BUILD=1
OURS_SERVER_ARGS=${OURS_SERVER_ARGS:-}
OURS_CLIENT_ARGS=${OURS_CLIENT_ARGS:-}
TAG=${TAG:-}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PROBE="$ROOT/Benchmarks/latency_probe.py"
# shellcheck source=Benchmarks/bench-files.sh
. "$ROOT/Benchmarks/bench-files.sh"
RESULTS_DIR="$ROOT/benchmark-results"
OUT_JSON="$RESULTS_DIR/latency-under-load-$RATE${TAG:+-$TAG}.json"
LOG_COPY="$RESULTS_DIR/latency-under-load-logs"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

whole() { case $2 in '' | *[!0-9]*) die "$1 must be a whole number, not '$2'" ;; esac; }
whole DURATION "$DURATION"; whole IDLE_SECONDS "$IDLE_SECONDS"; whole OPEN_AT "$OPEN_AT"
whole INTERVAL_MS "$INTERVAL_MS"; whole PROBE_TIMEOUT "$PROBE_TIMEOUT"
[ "$OPEN_AT" -lt $((DURATION - 2)) ] || die "OPEN_AT ($OPEN_AT) must be at least 2 s before the download ends (DURATION=$DURATION)"
[ "$(id -u)" = 0 ] || die "run as root (network namespaces, tc, sshd, TUN)"
if [ -z "$RATE" ]; then
    # Several rates: build once, then this script once per rate, each with its own namespaces.
    for rate in $RATES; do
        [[ "$rate" =~ ^[0-9]+[kmg]?bit$ ]] || die "each of RATES must look like 40mbit, not '$rate'"
    done
    if [ "$SKIP_BUILD" != 1 ] && [[ " $SETUPS " == *" ours "* || " $SETUPS " == *" ip "* ]]; then
        log "building release binaries"
        swift build -c release --product tunnel-server >&2
        swift build -c release --product tunnel-client >&2
    fi
    status=0
    for rate in $RATES; do
        echo; echo "=== $rate ==="
        RATE=$rate SKIP_BUILD=1 "$0" || { status=$?; log "the run at $rate failed (status $status)"; }
    done
    exit "$status"
fi
[[ "$RATE" =~ ^[0-9]+[kmg]?bit$ ]] || die "RATE must look like 40mbit, not '$RATE'"

# ---------------------------------------------------------------- requirements
missing=()
for pair in iperf3:iperf3 ssh:openssh-client ssh-keygen:openssh-client /usr/sbin/sshd:openssh-server \
    ip:iproute2 tc:iproute2 ss:iproute2 openssl:openssl python3:python3 timeout:coreutils; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    die "missing tools; install them with: apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
fi
[ -c /dev/net/tun ] || case " $SETUPS " in *" ip "*) die "/dev/net/tun is missing (needed by SETUPS=ip)" ;; esac

# ---------------------------------------------------------------------- build
uses_ours() { [[ " $SETUPS " == *" ours "* || " $SETUPS " == *" ip "* ]]; }
if uses_ours; then
    if [ "$SKIP_BUILD" != 1 ]; then
        log "building release binaries"
        swift build -c release --product tunnel-server >&2
        swift build -c release --product tunnel-client >&2
    fi
    BIN=${OURS_BIN:-$(swift build -c release --show-bin-path)}
    [ -x "$BIN/tunnel-server" ] && [ -x "$BIN/tunnel-client" ] || die "no tunnel-server/tunnel-client in $BIN"
fi

# ------------------------------------------------------- processes, namespaces, cleanup
WORK=$(mktemp -d /tmp/latency-under-load.XXXXXX)
mkdir -p "$WORK/logs" "$WORK/pki" "$WORK/ssh" "$WORK/state"
PIDS=()
NAMESPACES=()
SUFFIX=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
CLI=lul-cli-$SUFFIX
SRV=lul-srv-$SUFFIX

stop_pid() {     # TERM, up to 3 s, then KILL; waits for it
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$? pid ns pids
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    for ns in "${NAMESPACES[@]}"; do
        # Whatever is still inside our namespaces was started here (sshd's session children).
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || { kill -TERM $pids 2>/dev/null || true; sleep 0.5; kill -KILL $pids 2>/dev/null || true; }
        ip netns delete "$ns" 2>/dev/null || true
    done
    if [ -d "$WORK/logs" ]; then   # keep the logs (benchmark-results/ is git-ignored)
        rm -rf "$LOG_COPY"; mkdir -p "$LOG_COPY" && cp -r "$WORK/logs/." "$LOG_COPY/" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start() {        # start LOGFILE NAMESPACE CMD...: in the background; pid in $LAST_PID
    local logfile=$1 ns=$2; shift 2
    ip netns exec "$ns" "$@" >"$logfile" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
}

wait_for() {     # wait_for SECONDS WHAT COMMAND...: poll every 0.1 s, die after SECONDS
    local deadline=$((SECONDS + $1)) what=$2; shift 2
    until "$@"; do
        [ $SECONDS -lt $deadline ] || die "$what not within $1 s (logs: $LOG_COPY)"
        sleep 0.1
    done
}

listening() { [ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ]; }

# --------------------------------------------------------------------- topology
SRV_ADDR=172.31.77.1
CLI_ADDR=172.31.77.2
TUN_ADDR=10.90.0.1          # tunnel-server's TUN address; the pool follows it
ECHO_PORT=7007 IPERF_PORT=5201 TUNNEL_PORT=4433 SSH_PORT=2222

for ns in "$CLI" "$SRV"; do
    ip netns add "$ns"
    NAMESPACES+=("$ns")
    ip -n "$ns" link set lo up
done
ip -n "$CLI" link add veth-c type veth peer name veth-s netns "$SRV"
ip -n "$CLI" addr add "$CLI_ADDR/24" dev veth-c
ip -n "$SRV" addr add "$SRV_ADDR/24" dev veth-s
ip -n "$CLI" link set veth-c up
ip -n "$SRV" link set veth-s up
for pair in "$CLI:veth-c" "$SRV:veth-s"; do
    ip netns exec "${pair%%:*}" tc qdisc add dev "${pair#*:}" root tbf rate "$RATE" burst 32kbit latency 50ms
done
if [ -n "$CC" ]; then
    # A namespace may only pick what the host allows (root namespace: any available one).
    allowed=$(ip netns exec "$SRV" sysctl -n net.ipv4.tcp_allowed_congestion_control)
    [[ " $allowed " == *" $CC "* ]] || die "CC=$CC is not in net.ipv4.tcp_allowed_congestion_control ($allowed); the host must allow it first"
    for ns in "$CLI" "$SRV"; do
        ip netns exec "$ns" sysctl -qw "net.ipv4.tcp_congestion_control=$CC" || die "cannot set congestion control $CC"
    done
fi
CC_IN_USE="$(ip netns exec "$SRV" sysctl -n net.ipv4.tcp_congestion_control) (server side), $(ip netns exec "$CLI" sysctl -n net.ipv4.tcp_congestion_control) (client side)"
log "namespaces $CLI ($CLI_ADDR) and $SRV ($SRV_ADDR), tbf $RATE burst 32kbit latency 50ms on both ends"
log "congestion control: $CC_IN_USE"

# ------------------------------------------------------------ server side
start "$WORK/logs/echo.log" "$SRV" python3 "$PROBE" echo-server --host 0.0.0.0 --port "$ECHO_PORT"
wait_for 10 "the echo server listening" listening "$SRV" "$ECHO_PORT"

IPERF_PID=
start_iperf_server() {
    start "$WORK/logs/iperf3-server.log" "$SRV" iperf3 -s -p "$IPERF_PORT"
    IPERF_PID=$LAST_PID
    wait_for 10 "iperf3 -s listening" listening "$SRV" "$IPERF_PORT"
}
start_iperf_server

# A throwaway CA for the client certificate: off loopback the server requires mutual TLS.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=latency-bench-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    -keyout "$WORK/pki/ca.key" -out "$WORK/pki/ca.crt" -days 1 2>/dev/null
printf 'basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = clientAuth\n' >"$WORK/pki/client.ext"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=latency-bench-client \
    -keyout "$WORK/pki/client.key" -out "$WORK/pki/client.csr" 2>/dev/null
openssl x509 -req -in "$WORK/pki/client.csr" -CA "$WORK/pki/ca.crt" -CAkey "$WORK/pki/ca.key" -set_serial 1 \
    -days 1 -extfile "$WORK/pki/client.ext" -out "$WORK/pki/client.crt" 2>/dev/null

# The pool's pushed route covers only the tunnel's own /24, so the IP tunnel never
# carries the other setups' traffic.
write_pool_plist "$WORK/server.plist" 10.90.0.0

make_ssh_keys "$WORK/ssh"
write_sshd_config "$WORK/ssh/sshd_config" "$SSH_PORT" "$SRV_ADDR" "$WORK/ssh"
start "$WORK/logs/sshd.log" "$SRV" /usr/sbin/sshd -f "$WORK/ssh/sshd_config" -D -e
wait_for 10 "sshd listening" listening "$SRV" "$SSH_PORT"

start_tunnel_server() {
    SERVER_LOG="$WORK/logs/tunnel-server.log"
    # A server on a non-loopback address refuses its own loopback by default:
    # the forwards reach the echo server and iperf3 there, so allow just those.
    # shellcheck disable=SC2086  # OURS_SERVER_ARGS split on purpose
    start "$SERVER_LOG" "$SRV" "$BIN/tunnel-server" --host "$SRV_ADDR" --port "$TUNNEL_PORT" \
        --config "$WORK/server.plist" --tun lulsrv0 --tun-address "$TUN_ADDR" \
        --allow "127.0.0.1:$ECHO_PORT,$IPERF_PORT" \
        --state-directory "$WORK/state" --control "$WORK/server.sock" --client-ca "$WORK/pki/ca.crt" $OURS_SERVER_ARGS
    SERVER_PID=$LAST_PID
    server_ready() {
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; die "tunnel-server exited"; }
        grep -qs 'listening on' "$SERVER_LOG" && grep -Eqs 'SHA-256 [0-9A-Fa-f:]{64,}' "$SERVER_LOG"
    }
    wait_for 20 "tunnel-server listening" server_ready
    FINGERPRINT=$(grep -Eo 'SHA-256 [0-9A-Fa-f:]{64,}' "$SERVER_LOG" | head -n 1 | cut -d' ' -f2)
}
if uses_ours; then
    start_tunnel_server
    TRUST=(--server "$SRV_ADDR:$TUNNEL_PORT" --pin-sha256 "$FINGERPRINT" --cert "$WORK/pki/client.crt" --key "$WORK/pki/client.key")
fi

# ------------------------------------------------------------ client side
# Each setup: TP_HOST TP_PORT ECHO_HOST ECHO_PORT, and the server-side port of the
# connection that carries the download (for the ss snapshot).
DIRECT=("$SRV_ADDR" "$IPERF_PORT" "$SRV_ADDR" "$ECHO_PORT" "$IPERF_PORT")
OURS=(127.0.0.1 17001 127.0.0.1 17002 "$TUNNEL_PORT")
SSH=(127.0.0.1 17011 127.0.0.1 17012 "$SSH_PORT")
IPT=("$TUN_ADDR" "$IPERF_PORT" "$TUN_ADDR" "$ECHO_PORT" "$TUNNEL_PORT")

CLIENT_PID=
start_ours() {
    # shellcheck disable=SC2086
    start "$WORK/logs/tunnel-client-forward.log" "$CLI" "$BIN/tunnel-client" forward "${TRUST[@]}" \
        --control "$WORK/forward.sock" $OURS_CLIENT_ARGS \
        -L "127.0.0.1:${OURS[1]}:127.0.0.1:$IPERF_PORT" -L "127.0.0.1:${OURS[3]}:127.0.0.1:$ECHO_PORT"
    CLIENT_PID=$LAST_PID
    wait_for 20 "tunnel-client forward listening" listening "$CLI" "${OURS[3]}"
    # It binds its ports before it connects: wait for the tunnel too.
    wait_for 20 "tunnel-client forward's tunnel up" grep -qs 'tunnel up' "$WORK/logs/tunnel-client-forward.log"
}
start_ssh() {
    start "$WORK/logs/ssh.log" "$CLI" ssh -N -F /dev/null -i "$WORK/ssh/client_key" -o IdentitiesOnly=yes \
        -o IdentityAgent=none -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
        -o LogLevel=ERROR -o ExitOnForwardFailure=yes -p "$SSH_PORT" \
        -L "127.0.0.1:${SSH[1]}:127.0.0.1:$IPERF_PORT" -L "127.0.0.1:${SSH[3]}:127.0.0.1:$ECHO_PORT" "$(id -un)@$SRV_ADDR"
    CLIENT_PID=$LAST_PID
    wait_for 20 "ssh -L listening" listening "$CLI" "${SSH[3]}"
}
start_ip() {
    # shellcheck disable=SC2086
    start "$WORK/logs/tunnel-client-ip.log" "$CLI" "$BIN/tunnel-client" ip "${TRUST[@]}" \
        --control "$WORK/ip.sock" --tun lulcli0 $OURS_CLIENT_ARGS
    CLIENT_PID=$LAST_PID
    ip_up() {
        kill -0 "$CLIENT_PID" 2>/dev/null || { cat "$WORK/logs/tunnel-client-ip.log" >&2; die "tunnel-client ip exited"; }
        ip -n "$CLI" route get "$TUN_ADDR" 2>/dev/null | grep -q 'dev lulcli0'
    }
    wait_for 20 "tunnel-client ip routing $TUN_ADDR through its TUN" ip_up
}
# One setup's client at a time, so the snapshot finds one tunnel connection.
stop_client() { [ -z "$CLIENT_PID" ] || stop_pid "$CLIENT_PID"; CLIENT_PID=; }

# ------------------------------------------------------------ measurements
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
INTERVAL=$(awk -v ms="$INTERVAL_MS" 'BEGIN { printf "%.3f", ms / 1000 }')

now() { date +%s.%N; }
plus() { awk -v a="$1" -v b="$2" -v c="${3:-0}" 'BEGIN { printf "%.3f", a + b + c }'; }   # plus A B [C]: A+B+C

probe() {        # probe OUTFILE HOST PORT PROBE-OPTIONS...: one echo flow, bounded
    local out=$1 host=$2 port=$3; shift 3
    timeout -k 2 $((DURATION + IDLE_SECONDS + 4 * PROBE_TIMEOUT + 40)) ip netns exec "$CLI" python3 "$PROBE" probe \
        --host "$host" --port "$port" --interval "$INTERVAL" --timeout "$PROBE_TIMEOUT" "$@" \
        >"$out" 2>>"$WORK/logs/probe.log" || true
    [ -s "$out" ] || echo '{"error": "the probe did not finish in time", "sent": 0}' >"$out"
}

iperf_idle() { [ -z "$(ip netns exec "$SRV" ss -Htn state established "sport = :$IPERF_PORT")" ]; }
download() {     # download OUTFILE HOST PORT: iperf3 -R for DURATION seconds, bounded
    local out=$1 i
    for i in $(seq 1 50); do iperf_idle && break; sleep 0.1; done
    timeout -k 2 $((DURATION + 20)) ip netns exec "$CLI" iperf3 -c "$2" -p "$3" -R -t "$DURATION" -J \
        --connect-timeout 5000 >"$out" 2>>"$WORK/logs/iperf3-client.log" || true
    if ! grep -q '"sum_received"' "$out"; then   # a failed test can leave iperf3 -s busy
        stop_pid "$IPERF_PID"
        start_iperf_server
    fi
}

snapshot() {     # snapshot NAME PORT: the download's sender socket and the tbf queue, mid-download
    local name=$1 port=$2 file="$WORK/logs/snapshot-$1.txt"
    {
        echo "## server side ss -tinm (sport $port)"
        ip netns exec "$SRV" ss -Htinm state established "( sport = :$port )" || true
        echo "## server side ss -tin, TUN-side connections (IP tunnel)"
        ip netns exec "$SRV" ss -Htin state established "( src $TUN_ADDR )" || true
        echo "## client side ss -tin"
        ip netns exec "$CLI" ss -Htin state established || true
        echo "## server side qdisc"
        ip netns exec "$SRV" tc -s qdisc show dev veth-s || true
    } >"$file" 2>&1
    local status=()
    if [ "$name" = ours ] || [ "$name" = ip ]; then   # our server's own queues, at the same moment
        "$BIN/tunnel-server" status --json --control "$WORK/server.sock" >"$WORK/logs/status-$name.json" 2>>"$WORK/logs/probe.log" \
            && status=(--status "$WORK/logs/status-$name.json")
    fi
    python3 "$PROBE" where --file "$file" --port "$port" --setup "$name" "${status[@]}" >"$WORK/where-$name.json" 2>>"$WORK/logs/probe.log" || true
}

record() {       # record SETUP SCENARIO PROBE_FILE [IPERF_FILE]
    local tp='null' where='null'
    [ -z "${4:-}" ] || tp=$(python3 "$PROBE" iperf --json "$4")
    [ ! -s "$WORK/where-$1.json" ] || [ "$2" = idle ] || where=$(cat "$WORK/where-$1.json")
    printf '{"setup": "%s", "scenario": "%s", "probe": %s, "throughput": %s, "where": %s}\n' \
        "$1" "$2" "$(cat "$3")" "$tp" "$where" >>"$RESULTS"
    log "$1 $2: $(cat "$3")${4:+ $tp}"
}

measure_setup() { # measure_setup NAME TP_HOST TP_PORT ECHO_HOST ECHO_PORT SENDER_PORT
    local name=$1 tph=$2 tpp=$3 eh=$4 ep=$5 sport=$6 f=$WORK/logs/$1 t0 probe_pid iperf_pid i
    rm -f "$WORK/where-$name.json" "$WORK/ready" "$WORK/go"
    t0=$(now)
    probe "$f-idle.json" "$eh" "$ep" --from-epoch "$(plus "$t0" 1)" --until-epoch "$(plus "$t0" $((IDLE_SECONDS + 1)))"
    record "$name" idle "$f-idle.json"

    # Opened before: the download starts once the flow has answered; the window opens
    # 1.5 s into the download (its start-up is excluded) and closes 0.5 s before its end.
    probe "$f-before.json" "$eh" "$ep" --ready-file "$WORK/ready" --go-file "$WORK/go" &
    probe_pid=$!
    for i in $(seq 1 100); do [ -e "$WORK/ready" ] && break; sleep 0.1; done
    [ -e "$WORK/ready" ] || log "$name: the echo flow did not answer within 10 s before the download"
    t0=$(now)
    download "$f-before-iperf.json" "$tph" "$tpp" &
    iperf_pid=$!
    echo "$(plus "$t0" 1.5) $(plus "$t0" "$DURATION" -0.5)" >"$WORK/go.tmp" && mv "$WORK/go.tmp" "$WORK/go"
    sleep $((DURATION / 2)); snapshot "$name" "$sport"
    wait "$iperf_pid" || true; wait "$probe_pid" || true
    record "$name" before "$f-before.json" "$f-before-iperf.json"

    # Opened during: the flow's open and first probe happen OPEN_AT seconds into the download.
    t0=$(now)
    download "$f-during-iperf.json" "$tph" "$tpp" &
    iperf_pid=$!
    sleep "$OPEN_AT"
    probe "$f-during.json" "$eh" "$ep" --from-epoch 0 --until-epoch "$(plus "$t0" "$DURATION" -0.5)"
    wait "$iperf_pid" || true
    record "$name" during "$f-during.json" "$f-during-iperf.json"
}

log "rate $RATE, downloads of $DURATION s, probes every $INTERVAL_MS ms answered within $PROBE_TIMEOUT s"
for setup in $SETUPS; do
    case $setup in
        direct) measure_setup direct "${DIRECT[@]}" ;;
        ours) start_ours; measure_setup ours "${OURS[@]}"; stop_client ;;
        ssh) start_ssh; measure_setup ssh "${SSH[@]}"; stop_client ;;
        ip) start_ip; measure_setup ip "${IPT[@]}"; stop_client ;;
        *) die "unknown setup '$setup' (direct ours ssh ip)" ;;
    esac
done

for f in "$WORK"/logs/tunnel-*.log; do
    [ -e "$f" ] || continue
    n=$(grep -cE ' (warning|error|critical) ' "$f" || true)
    [ "$n" = 0 ] || log "$(basename "$f"): $n warning/error/critical line(s), e.g. $(grep -m1 -E ' (warning|error|critical) ' "$f")"
done

mkdir -p "$RESULTS_DIR"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); results: ${OUT_JSON#"$ROOT"/}"
python3 "$PROBE" report --results "$RESULTS" --json-out "$OUT_JSON" --rate "$RATE" --cc "$CC_IN_USE" \
    --duration "$DURATION" --interval-ms "$INTERVAL_MS" --timeout-ms "$((PROBE_TIMEOUT * 1000))"
