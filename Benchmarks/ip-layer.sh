#!/usr/bin/env bash
# IP-layer VPN throughput: one iperf3 TCP stream through SimpleTunnel's IP
# tunnel versus OpenVPN 2.6 in TCP mode with AES-256-GCM, same namespace
# topology, run back to back. Prints both, the ratio and PASS/FAIL against the
# target (SimpleTunnel >= 2x OpenVPN), plus the bare veth path as the ceiling.
# Every configuration is measured upload (client -> destination) and download
# (iperf3 -R); SimpleTunnel with its TUN offloads on (the default) and off
# (SIMPLETUNNEL_TUN_OFFLOAD=off on both ends). PASS/FAIL is on upload.
# SimpleTunnel's tunnel is dual stack: its IPv6 throughput (iperf3 -6) is
# measured beside IPv4 through the same tunnel.
#
#   sudo Benchmarks/ip-layer.sh
#   sudo DURATION=15 RUNS=5 Benchmarks/ip-layer.sh
#
# Environment overrides:
#   DURATION=8        seconds per iperf3 run
#   RUNS=3            runs per configuration; the median is reported
#   BUILD=1           build tunnel-server and tunnel-client (swift build -c
#                     release) first when swift is installed; 0 skips the build
#   BIN_DIR=DIR       where tunnel-server and tunnel-client are (default: the
#                     release bin path of this checkout)
#   OPENVPN_DCO=0     1 lets OpenVPN use data channel offload when the kernel
#                     has it; the default passes --disable-dco (userspace, like us)
#   OPENVPN_NODELAY=1 also measure OpenVPN with --tcp-nodelay (like for like:
#                     SwiftNIO sets TCP_NODELAY); PASS/FAIL is against the
#                     issue's configuration (OpenVPN defaults); 0 skips it
#   OPENVPN_EXTRA=    more options for both OpenVPN ends, e.g. "--tcp-nodelay"
#   OURS_TUN_ADDRESS=10.90.0.1   tunnel-server --tun-address
#   OURS_MTU=         --mtu for tunnel-server and tunnel-client when set
#                     (their default is 1400)
#   OURS_OFFLOAD_OFF=1  also measure SimpleTunnel with TUN offloads off; 0 skips it
#   KEEP_WORK=1       keep the temporary directory (logs, PKI, iperf3 JSON)
#
# Requirements: root, Linux with network namespaces and /dev/net/tun, and
# apt-get if openvpn (2.6.x), iperf3, iproute2 or openssl is missing (the
# script installs them). Default runtime is about 2 minutes (plus the build).
#
# Topology (everything inside namespaces this script creates and deletes on
# exit; the root namespace's addresses, routes and firewall are not touched):
#
#   stb-cli-R  veth 198.18.1.2/24 --- 198.18.1.1/24  stb-srv-R  198.18.2.1/24 --- 198.18.2.2/24  stb-dst-R
#   (iperf3 -c, VPN clients)              (VPN servers, ip_forward=1)              (iperf3 -s)
#
#   baseline:      client ns routes 198.18.2.0/24 via 198.18.1.1 (plain forwarding)
#   OpenVPN:       pool 10.91.0.0/24, pushes route 198.18.2.0/24; run with its
#                  defaults and again with --tcp-nodelay
#   SimpleTunnel:  pool 10.90.0.2-10.90.0.250, pushes route 198.18.2.0/24; IPv6 pool
#                  fd00:90::2-fd00:90::fa, pushes fd00:2::/64 (destination fd00:2::2,
#                  links fd00:1::/64 and fd00:2::/64 beside the IPv4 ones)
#
# Results also go to benchmark-results/ip-layer.json (git-ignored).
# Exit status: 0 when the benchmark ran (whatever PASS/FAIL says), 1 on setup errors.
set -euo pipefail

DURATION=${DURATION:-8}
RUNS=${RUNS:-3}
BUILD=${BUILD:-1}
OPENVPN_DCO=${OPENVPN_DCO:-0}
OURS_TUN_ADDRESS=${OURS_TUN_ADDRESS:-10.90.0.1}
OURS_MTU=${OURS_MTU:-}
KEEP_WORK=${KEEP_WORK:-0}
OPENVPN_NODELAY=${OPENVPN_NODELAY:-1}
OPENVPN_EXTRA=${OPENVPN_EXTRA:-}
OURS_OFFLOAD_OFF=${OURS_OFFLOAD_OFF:-1}
TARGET_RATIO=2

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=Benchmarks/bench-files.sh
. "$ROOT/Benchmarks/bench-files.sh"

die() { echo "ip-layer.sh: $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

case "$DURATION" in '' | *[!0-9]* | 0) die "DURATION must be a whole number of seconds" ;; esac
case "$RUNS" in '' | *[!0-9]* | 0) die "RUNS must be a positive whole number" ;; esac
[ "$(id -u)" = 0 ] || die "run as root (network namespaces, TUN devices)"
[ -c /dev/net/tun ] || die "/dev/net/tun is missing"

# --- requirements -----------------------------------------------------------

install_missing() {
    local missing=()
    command -v openvpn >/dev/null || missing+=(openvpn)
    command -v iperf3 >/dev/null || missing+=(iperf3)
    command -v ip >/dev/null || missing+=(iproute2)
    command -v ss >/dev/null || missing+=(iproute2)
    command -v openssl >/dev/null || missing+=(openssl)
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    note "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Only what is missing, so present packages (openssl!) are not upgraded on the way.
    local packages
    read -r -a packages <<<"$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
    if ! apt-get install -y "${packages[@]}" >&2; then
        apt-get update >&2
        apt-get install -y "${packages[@]}" >&2
    fi
}
install_missing

OPENVPN_VERSION=$(openvpn --version 2>/dev/null | head -n 1 || true)   # --version exits 1
case "$OPENVPN_VERSION" in
    "OpenVPN 2.6."*) ;;
    *) die "need OpenVPN 2.6.x, found: ${OPENVPN_VERSION:-nothing}" ;;
esac
OPENVPN_SHORT=$(awk '{ print $2 }' <<<"$OPENVPN_VERSION")
IPERF_VERSION=$(iperf3 --version 2>/dev/null | head -n 1 || true)

# --- our binaries (built before any namespace exists) -----------------------

OURS_UNAVAILABLE=""
if [ -z "${BIN_DIR:-}" ]; then
    BIN_DIR=$ROOT/.build/release
    if [ "$BUILD" = 1 ] && command -v swift >/dev/null; then
        note "building tunnel-server and tunnel-client (swift build -c release)"
        build_log=$(mktemp)
        if (cd "$ROOT" && swift build -c release --product tunnel-server && swift build -c release --product tunnel-client) >"$build_log" 2>&1; then
            BIN_DIR=$(cd "$ROOT" && swift build -c release --show-bin-path 2>/dev/null || echo "$BIN_DIR")
        else
            tail -n 20 "$build_log" >&2
            OURS_UNAVAILABLE="release build failed"
        fi
        rm -f "$build_log"
    fi
fi
SERVER_BIN=$BIN_DIR/tunnel-server
CLIENT_BIN=$BIN_DIR/tunnel-client
if [ -z "$OURS_UNAVAILABLE" ]; then
    if [ ! -x "$SERVER_BIN" ] || [ ! -x "$CLIENT_BIN" ]; then
        OURS_UNAVAILABLE="no tunnel-server/tunnel-client in $BIN_DIR"
    elif ! grep -q -- '--tun-address' <<<"$("$SERVER_BIN" serve --help 2>&1)"; then
        OURS_UNAVAILABLE="tunnel-server has no --tun/--tun-address option"
    elif ! grep -Eq '^[[:space:]]+ip([[:space:]]|$)' <<<"$("$CLIENT_BIN" --help 2>&1)"; then
        OURS_UNAVAILABLE="tunnel-client has no 'ip' subcommand"
    fi
fi

# --- processes, namespaces, cleanup -----------------------------------------

WORK=$(mktemp -d /tmp/stb-ip-bench.XXXXXX)
declare -A LIVE=()      # pid -> what it is, for everything started in the background
NAMESPACES=()

alive() {   # running and not a zombie
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# stop_pids PID...: SIGTERM, up to a second's grace, then SIGKILL; reaps them.
stop_pids() {
    local pid i any
    [ $# -eq 0 ] && return 0
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    for i in 1 2 3 4 5 6 7 8 9 10; do
        any=0
        for pid in "$@"; do alive "$pid" && any=1; done
        [ $any = 0 ] && break
        sleep 0.1
    done
    for pid in "$@"; do
        alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        unset "LIVE[$pid]"
    done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pids "${!LIVE[@]}"
    local ns pids
    for ns in "${NAMESPACES[@]}"; do
        # Anything still inside our namespaces was started by us (e.g. a daemon child).
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then
            # shellcheck disable=SC2086
            kill -TERM $pids 2>/dev/null || true
            sleep 1
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            # shellcheck disable=SC2086
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
        fi
        ip netns delete "$ns" 2>/dev/null || true
    done
    if [ "$KEEP_WORK" = 1 ]; then note "logs kept in $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_bg NAME LOG COMMAND...: runs COMMAND in the background; sets BG_PID.
start_bg() {
    local name=$1 log=$2
    shift 2
    "$@" >"$log" 2>&1 &
    BG_PID=$!
    LIVE[$BG_PID]=$name
}

# run_bounded SECONDS LOG COMMAND...: runs COMMAND with a time limit; the wait
# is interruptible, so SIGINT/SIGTERM reach the cleanup at once.
run_bounded() {
    local limit=$1 log=$2 pid rc=0
    shift 2
    timeout -k 2 "$limit" "$@" >"$log" 2>&1 &
    pid=$!
    LIVE[$pid]=bounded
    wait "$pid" || rc=$?
    unset "LIVE[$pid]"
    return $rc
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -ge $deadline ] && return 1
        sleep 0.2
    done
}

SUFFIX=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
CLI=stb-cli-$SUFFIX
SRV=stb-srv-$SUFFIX
DST=stb-dst-$SUFFIX
DST_ADDR=198.18.2.2
DST_ADDR6=fd00:2::2

setup_topology() {
    local ns
    for ns in "$CLI" "$SRV" "$DST"; do
        ip netns add "$ns"
        NAMESPACES+=("$ns")
        ip -n "$ns" link set lo up
    done
    # Interfaces are created inside the namespaces directly.
    ip -n "$CLI" link add veth-srv type veth peer name veth-cli netns "$SRV"
    ip -n "$SRV" link add veth-dst type veth peer name veth-srv netns "$DST"
    ip -n "$CLI" addr add 198.18.1.2/24 dev veth-srv
    ip -n "$SRV" addr add 198.18.1.1/24 dev veth-cli
    ip -n "$SRV" addr add 198.18.2.1/24 dev veth-dst
    ip -n "$DST" addr add "$DST_ADDR"/24 dev veth-srv
    ip -n "$CLI" link set veth-srv up
    ip -n "$SRV" link set veth-cli up
    ip -n "$SRV" link set veth-dst up
    ip -n "$DST" link set veth-srv up
    # IPv6 beside IPv4, usable at once (no duplicate address detection on links only we made).
    ip -n "$CLI" addr add fd00:1::2/64 dev veth-srv nodad
    ip -n "$SRV" addr add fd00:1::1/64 dev veth-cli nodad
    ip -n "$SRV" addr add fd00:2::1/64 dev veth-dst nodad
    ip -n "$DST" addr add "$DST_ADDR6"/64 dev veth-srv nodad
    ip netns exec "$SRV" sysctl -qw net.ipv6.conf.all.forwarding=1
    ip -n "$DST" -6 route add fd00:90::/64 via fd00:2::1
    # New namespaces may inherit IPv4 settings from the root one: set them all.
    ip netns exec "$SRV" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
    ip netns exec "$CLI" sh -c 'echo 0 > /proc/sys/net/ipv4/ip_forward'
    ip netns exec "$DST" sh -c 'echo 0 > /proc/sys/net/ipv4/ip_forward'
    # Return paths from the destination: the client veth (baseline) and both VPN pools.
    ip -n "$DST" route add 198.18.1.0/24 via 198.18.2.1
    ip -n "$DST" route add 10.91.0.0/24 via 198.18.2.1
    ip -n "$DST" route add 10.90.0.0/24 via 198.18.2.1
}

# One iperf3 server per configuration, on its own port: a server whose last
# client vanished with a torn-down tunnel can stay "busy running a test".
IPERF_PORT=5200 IPERF_PID=""
iperf_listening() { [ -n "$(ip netns exec "$DST" ss -Htln "sport = :$IPERF_PORT")" ]; }
iperf_idle() { [ -z "$(ip netns exec "$DST" ss -Htn state established "sport = :$IPERF_PORT")" ]; }
# start_iperf_server [ADDRESS]: on DST_ADDR unless given (DST_ADDR6 for -6).
start_iperf_server() {
    IPERF_PORT=$((IPERF_PORT + 1))
    start_bg iperf3-server "$WORK/iperf3-server-$IPERF_PORT.log" ip netns exec "$DST" iperf3 -s -B "${1:-$DST_ADDR}" -p "$IPERF_PORT"
    IPERF_PID=$BG_PID
    wait_for 10 iperf_listening || die "iperf3 server did not start: $(cat "$WORK/iperf3-server-$IPERF_PORT.log")"
}
# Before a tunnel goes down: let the last connections close through it (bounded), stop the server.
stop_iperf_server() {
    wait_for 3 iperf_idle || true
    stop_pids "$IPERF_PID"
}

# route_dev: the device the client namespace uses for the destination.
route_dev() { ip -n "$CLI" route get "$DST_ADDR" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1; }

tun_mtu() { ip -n "$CLI" -o link show dev "$1" | sed -n 's/.* mtu \([0-9]*\).*/\1/p'; }

# iperf_gbps FILE: receiver Gbit/s from iperf3 -J output, or fails.
iperf_gbps() {
    grep -q '"error"' "$1" && return 1
    awk -F: '
        /"sum_received"[[:space:]]*:/ { inside = 1 }
        inside && /"bits_per_second"/ { gsub(/[^0-9.eE+-]/, "", $2); printf "%.3f\n", $2 / 1e9; found = 1; exit }
        END { exit !found }' "$1"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# iperf_run OUT [ADDRESS]: one client run to DST_ADDR (or ADDRESS); waits for the server to finish
# the previous test first (iperf3 3.12 can still be "busy" just after its client exits).
iperf_run() {
    local attempt rc
    for attempt in 1 2 3; do
        wait_for 5 iperf_idle || true
        rc=0
        run_bounded $((DURATION + 20)) "$1" \
            ip netns exec "$CLI" iperf3 -c "${2:-$DST_ADDR}" -p "$IPERF_PORT" -t "$DURATION" -J --connect-timeout 5000 ${IPERF_REVERSE:+-R} || rc=$?
        grep -q 'server is busy' "$1" || return $rc
        note "iperf3 server still busy with the previous test; retrying"
        sleep 1
    done
    return 1
}

# measure_direction LABEL [ADDRESS]: RUNS single-stream runs from the client namespace to DST_ADDR (or ADDRESS)
# (download when IPERF_REVERSE is set); sets DIRECTION_RUNS (space separated
# Gbit/s) and DIRECTION_MEDIAN (empty if none).
measure_direction() {
    local label=$1 target=${2:-$DST_ADDR} run out gbps
    DIRECTION_RUNS=""
    for run in $(seq 1 "$RUNS"); do
        out=$WORK/iperf-$label-$run.json
        if iperf_run "$out" "$target" && gbps=$(iperf_gbps "$out"); then
            printf '  %-22s run %d: %7.3f Gbit/s\n' "$label" "$run" "$gbps"
            DIRECTION_RUNS="$DIRECTION_RUNS${DIRECTION_RUNS:+ }$gbps"
        else
            printf '  %-22s run %d: failed: %s\n' "$label" "$run" \
                "$(grep -o '"error"[^,}]*' "$out" 2>/dev/null | head -n 1 || tail -n 1 "$out")"
        fi
    done
    DIRECTION_MEDIAN=$(tr ' ' '\n' <<<"$DIRECTION_RUNS" | grep . | median || true)
}

# measure LABEL [ADDRESS]: upload, then download (-R); sets MEASURED_RUNS and
# MEASURED_MEDIAN (upload) and MEASURED_RUNS_R and MEASURED_MEDIAN_R (download).
measure() {
    IPERF_REVERSE="" measure_direction "$1" "${2:-}"
    MEASURED_RUNS=$DIRECTION_RUNS MEASURED_MEDIAN=$DIRECTION_MEDIAN
    IPERF_REVERSE=1 measure_direction "$1-download" "${2:-}"
    MEASURED_RUNS_R=$DIRECTION_RUNS MEASURED_MEDIAN_R=$DIRECTION_MEDIAN
}

# --- baseline ---------------------------------------------------------------

BASE_STATUS=failed BASE_RUNS="" BASE_MEDIAN="" BASE_DETAIL="" BASE_RUNS_R="" BASE_MEDIAN_R=""
run_baseline() {
    echo "baseline: client -> server namespace (forwarding) -> destination, no tunnel"
    ip -n "$CLI" route add 198.18.2.0/24 via 198.18.1.1
    start_iperf_server
    measure baseline
    stop_iperf_server
    ip -n "$CLI" route del 198.18.2.0/24 via 198.18.1.1
    BASE_RUNS=$MEASURED_RUNS BASE_MEDIAN=$MEASURED_MEDIAN BASE_RUNS_R=$MEASURED_RUNS_R BASE_MEDIAN_R=$MEASURED_MEDIAN_R
    [ -n "$BASE_MEDIAN" ] && BASE_STATUS=ok || BASE_DETAIL="every iperf3 run failed"
}

# --- OpenVPN ----------------------------------------------------------------

make_pki() {
    local d=$WORK/pki name eku
    mkdir -p "$d"
    cat >"$d/ca.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = stb-bench-ca
[v3_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
CNF
    openssl req -x509 -config "$d/ca.cnf" -extensions v3_ca -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 1 2>/dev/null
    for name in server client; do
        [ $name = server ] && eku=serverAuth || eku=clientAuth
        printf 'basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = %s\n' \
            "$eku" >"$d/$name.ext"
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=stb-bench-$name" \
            -keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
        openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" \
            -days 1 -extfile "$d/$name.ext" -out "$d/$name.crt" 2>/dev/null
    done
}

# run_openvpn TAG [SERVER_OPTION...]: one OpenVPN configuration (OPENVPN_EXTRA
# goes to both ends, SERVER_OPTIONs to the server, which pushes what the
# client needs, e.g. --tcp-nodelay); sets R_STATUS, R_RUNS, R_MEDIAN, R_DETAIL and adds to OVPN_NOTES.
OVPN_NOTES=""
run_openvpn() {
    local tag=$1
    shift
    R_STATUS=failed R_RUNS="" R_MEDIAN="" R_DETAIL="" R_RUNS_R="" R_MEDIAN_R=""
    echo "OpenVPN $OPENVPN_SHORT: --proto tcp-server/tcp-client, --data-ciphers AES-256-GCM${*:+, server $*}"
    local d=$WORK/pki options=() extra=() server_pid client_pid dev
    local slog=$WORK/openvpn-server-$tag.log clog=$WORK/openvpn-client-$tag.log
    [ "$OPENVPN_DCO" = 1 ] || options=(--disable-dco)
    read -r -a extra <<<"$OPENVPN_EXTRA"
    options+=("${extra[@]}")
    start_bg openvpn-server "$slog" ip netns exec "$SRV" openvpn \
        --local 198.18.1.1 --port 1194 --proto tcp-server --dev tun --topology subnet \
        --server 10.91.0.0 255.255.255.0 --push "route 198.18.2.0 255.255.255.0" \
        --ca "$d/ca.crt" --cert "$d/server.crt" --key "$d/server.key" --dh none \
        --remote-cert-tls client --tls-version-min 1.2 --keepalive 10 60 \
        --data-ciphers AES-256-GCM --cipher AES-256-GCM "${options[@]}" "$@" --verb 3
    server_pid=$BG_PID
    start_bg openvpn-client "$clog" ip netns exec "$CLI" openvpn \
        --tls-client --pull --proto tcp-client --remote 198.18.1.1 1194 --nobind --dev tun \
        --connect-retry 1 1 --connect-timeout 5 \
        --ca "$d/ca.crt" --cert "$d/client.crt" --key "$d/client.key" \
        --remote-cert-tls server --tls-version-min 1.2 \
        --data-ciphers AES-256-GCM "${options[@]}" --verb 3
    client_pid=$BG_PID
    openvpn_up() { grep -qs 'Initialization Sequence Completed' "$clog" || ! alive "$client_pid"; }
    wait_for 30 openvpn_up || true
    if ! grep -qs 'Initialization Sequence Completed' "$clog"; then
        R_DETAIL="client did not reach 'Initialization Sequence Completed' within 30 s"
        echo "  $R_DETAIL; last server and client log lines:"
        tail -n 8 "$slog" "$clog" | sed 's/^/    /'
    else
        dev=$(route_dev)
        if [ "${dev#tun}" = "$dev" ]; then
            R_DETAIL="the route to $DST_ADDR does not use the OpenVPN TUN (dev ${dev:-none})"
            echo "  $R_DETAIL"
        else
            echo "  up: $(ip -n "$CLI" -4 -o addr show dev "$dev" | awk '{ print $2, $4 }'), route to $DST_ADDR via $dev, tun mtu $(tun_mtu "$dev")"
            start_iperf_server
            measure "openvpn-$tag"
            stop_iperf_server
            R_RUNS=$MEASURED_RUNS R_MEDIAN=$MEASURED_MEDIAN R_RUNS_R=$MEASURED_RUNS_R R_MEDIAN_R=$MEASURED_MEDIAN_R
            [ -n "$R_MEDIAN" ] && R_STATUS=ok || R_DETAIL="every iperf3 run failed"
        fi
    fi
    OVPN_NOTES=$({ echo "$OVPN_NOTES"; cat "$slog" "$clog" |
        grep -E 'DEPRECATED|WARNING|Note:|Data Channel: cipher|DCO version' |
        sed -E 's#^[0-9-]+ [0-9:]+ ##; s#^([^ ]*/)?[0-9]+(\.[0-9]+){3}:[0-9]+ ##'; } | grep . | sort -u || true)
    stop_pids "$client_pid" "$server_pid"
}

# --- SimpleTunnel -----------------------------------------------------------

OURS_TLS=""
OURS6_STATUS=unavailable OURS6_RUNS="" OURS6_MEDIAN="" OURS6_DETAIL="" OURS6_RUNS_R="" OURS6_MEDIAN_R=""
# run_ours on|off: SimpleTunnel with its TUN offloads on (the default) or off;
# sets R_STATUS, R_RUNS, R_MEDIAN, R_RUNS_R, R_MEDIAN_R, R_DETAIL and R_OFFLOADS (what the server logged);
# with offloads on it also measures the same tunnel over IPv6 (OURS6_*).
run_ours() {
    local mode=$1 env=()
    echo "SimpleTunnel: tunnel-server (TUN, IPv4.Pool) <- TLS over TCP -> tunnel-client ip, TUN offloads $mode"
    R_STATUS=unavailable R_RUNS="" R_MEDIAN="" R_DETAIL="" R_RUNS_R="" R_MEDIAN_R="" R_OFFLOADS=""
    if [ -n "$OURS_UNAVAILABLE" ]; then
        R_DETAIL="not available yet: $OURS_UNAVAILABLE"
        echo "  $R_DETAIL"
        return 0
    fi
    R_STATUS=failed
    [ "$mode" = off ] && env=(env SIMPLETUNNEL_TUN_OFFLOAD=off)
    local d=$WORK/ours-$mode server_pid client_pid fingerprint dev="" mtu=()
    mkdir -p "$d/state"
    write_pool_plist "$d/server.plist" 198.18.2.0 fd00:2::
    [ -n "$OURS_MTU" ] && mtu=(--mtu "$OURS_MTU")
    # A generated (pinned) server certificate; client certificates from the
    # benchmark CA, since the server only listens beyond loopback with mutual TLS.
    start_bg tunnel-server "$d/server.log" ip netns exec "$SRV" "${env[@]}" "$SERVER_BIN" \
        --host 198.18.1.1 --port 4433 --tun stbsrv0 --tun-address "$OURS_TUN_ADDRESS" "${mtu[@]}" \
        --config "$d/server.plist" --state-directory "$d/state" --client-ca "$WORK/pki/ca.crt"
    server_pid=$BG_PID
    server_ready() {
        { grep -qs 'listening on' "$d/server.log" && grep -Eqs 'SHA-256 [0-9A-Fa-f:]{64,}' "$d/server.log"; } || ! alive "$server_pid"
    }
    wait_for 20 server_ready || true
    fingerprint=$(grep -Eos 'SHA-256 [0-9A-Fa-f:]{64,}' "$d/server.log" | head -n 1 | cut -d' ' -f2 || true)
    if ! alive "$server_pid" || [ -z "$fingerprint" ] || ! grep -qs 'listening on' "$d/server.log"; then
        R_DETAIL="tunnel-server did not start (no 'listening on' and 'SHA-256 <hex>' within 20 s)"
        echo "  $R_DETAIL; last log lines:"
        tail -n 8 "$d/server.log" | sed 's/^/    /'
        stop_pids "$server_pid"
        return 0
    fi
    start_bg tunnel-client "$d/client.log" ip netns exec "$CLI" "${env[@]}" "$CLIENT_BIN" ip \
        --server 198.18.1.1:4433 --pin-sha256 "$fingerprint" \
        --cert "$WORK/pki/client.crt" --key "$WORK/pki/client.key" --tun stbcli0 "${mtu[@]}"
    client_pid=$BG_PID
    # Up when an address from the pool is on an interface in the client namespace.
    pool_dev() { ip -n "$CLI" -4 -o addr show 2>/dev/null | awk '$4 ~ /^10\.90\.0\./ { print $2; exit }'; }
    client_ready() { [ -n "$(pool_dev)" ] && [ "$(route_dev)" = "$(pool_dev)" ] || ! alive "$client_pid"; }
    wait_for 20 client_ready || true
    alive "$client_pid" && dev=$(pool_dev)
    if [ -z "$dev" ]; then
        R_DETAIL="tunnel-client got no address from the pool within 20 s"
        echo "  $R_DETAIL; last server and client log lines:"
        tail -n 8 "$d/server.log" "$d/client.log" | sed 's/^/    /'
    elif [ "$(route_dev)" != "$dev" ]; then
        R_DETAIL="the route to $DST_ADDR does not use the tunnel's TUN $dev (dev $(route_dev))"
        echo "  $R_DETAIL"
    else
        echo "  up: $(ip -n "$CLI" -4 -o addr show dev "$dev" | awk '{ print $2, $4 }'), route to $DST_ADDR via $dev, tun mtu $(tun_mtu "$dev")"
        start_iperf_server
        R_OFFLOADS=$(grep -Eos 'TUN offloads on [^:]*: [^[]*' "$d/server.log" | head -n 1 | sed 's/ *$//' || true)
        [ -z "$R_OFFLOADS" ] || echo "  server: $R_OFFLOADS"
        measure "simpletunnel-$mode"
        stop_iperf_server
        OURS_TLS=$(grep -Eos 'tls=TLSv[0-9.]+ [A-Z0-9_]+' "$d/server.log" | head -n 1 | cut -d= -f2 || true)
        R_RUNS=$MEASURED_RUNS R_MEDIAN=$MEASURED_MEDIAN R_RUNS_R=$MEASURED_RUNS_R R_MEDIAN_R=$MEASURED_MEDIAN_R
        [ -n "$R_MEDIAN" ] && R_STATUS=ok || R_DETAIL="every iperf3 run failed"
        # The same tunnel, IPv6 (iperf3 -6 to the destination's IPv6 address).
        if [ "$mode" = on ]; then
            OURS6_STATUS=failed
            if ! ip -n "$CLI" -6 route get "$DST_ADDR6" 2>/dev/null | grep -q " dev $dev "; then
                OURS6_DETAIL="the IPv6 route to $DST_ADDR6 does not use the tunnel's TUN $dev"
                echo "  $OURS6_DETAIL"
            else
                echo "  IPv6: $(ip -n "$CLI" -6 -o addr show dev "$dev" scope global | awk '{ print $4 }'), route to $DST_ADDR6 via $dev"
                start_iperf_server "$DST_ADDR6"
                measure simpletunnel-v6 "$DST_ADDR6"
                stop_iperf_server
                OURS6_RUNS=$MEASURED_RUNS OURS6_MEDIAN=$MEASURED_MEDIAN OURS6_RUNS_R=$MEASURED_RUNS_R OURS6_MEDIAN_R=$MEASURED_MEDIAN_R
                [ -n "$OURS6_MEDIAN" ] && OURS6_STATUS=ok || OURS6_DETAIL="every iperf3 -6 run failed"
            fi
        fi
    fi
    stop_pids "$client_pid" "$server_pid"
}

# --- run --------------------------------------------------------------------

CPUS=$(nproc)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
KERNEL=$(uname -r)
echo "$OPENVPN_VERSION"
echo "$IPERF_VERSION; single TCP stream, ${DURATION} s per run, ${RUNS} runs, median of receiver rate"
echo "namespaces: $CLI, $SRV, $DST"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $LOAD_BEFORE ($CPUS cores)"
awk -v l="${LOAD_BEFORE%% *}" -v c="$CPUS" 'BEGIN { exit !(l > c / 2) }' &&
    note "warning: the machine is busy (load $LOAD_BEFORE on $CPUS cores); expect noisy figures"

setup_topology
make_pki

run_baseline
# As the issue asks: OpenVPN's defaults (TCP_NODELAY off).
run_openvpn default
OVPN_STATUS=$R_STATUS OVPN_RUNS=$R_RUNS OVPN_MEDIAN=$R_MEDIAN OVPN_DETAIL=$R_DETAIL OVPN_RUNS_R=$R_RUNS_R OVPN_MEDIAN_R=$R_MEDIAN_R
# Like for like: SwiftNIO sets TCP_NODELAY on our sockets; OpenVPN's --tcp-nodelay does the same.
OVND_STATUS=skipped OVND_RUNS="" OVND_MEDIAN="" OVND_DETAIL="OPENVPN_NODELAY=0" OVND_RUNS_R="" OVND_MEDIAN_R=""
if [ "$OPENVPN_NODELAY" = 1 ]; then
    run_openvpn nodelay --tcp-nodelay
    OVND_STATUS=$R_STATUS OVND_RUNS=$R_RUNS OVND_MEDIAN=$R_MEDIAN OVND_DETAIL=$R_DETAIL OVND_RUNS_R=$R_RUNS_R OVND_MEDIAN_R=$R_MEDIAN_R
fi
run_ours on
OURS_STATUS=$R_STATUS OURS_RUNS=$R_RUNS OURS_MEDIAN=$R_MEDIAN OURS_DETAIL=$R_DETAIL OURS_RUNS_R=$R_RUNS_R OURS_MEDIAN_R=$R_MEDIAN_R OURS_OFFLOADS=$R_OFFLOADS
OFF_STATUS=skipped OFF_RUNS="" OFF_MEDIAN="" OFF_DETAIL="OURS_OFFLOAD_OFF=0" OFF_RUNS_R="" OFF_MEDIAN_R=""
if [ "$OURS_OFFLOAD_OFF" = 1 ]; then
    run_ours off
    OFF_STATUS=$R_STATUS OFF_RUNS=$R_RUNS OFF_MEDIAN=$R_MEDIAN OFF_DETAIL=$R_DETAIL OFF_RUNS_R=$R_RUNS_R OFF_MEDIAN_R=$R_MEDIAN_R
fi

# --- report -----------------------------------------------------------------

RATIO="" VERDICT="" RATIO_ND="" VERDICT_ND=""
if [ "$OURS_STATUS" = ok ] && [ "$OVPN_STATUS" = ok ]; then
    RATIO=$(awk -v o="$OURS_MEDIAN" -v t="$OVPN_MEDIAN" 'BEGIN { printf "%.2f", o / t }')
    VERDICT=$(awk -v r="$RATIO" -v t="$TARGET_RATIO" 'BEGIN { print (r >= t) ? "PASS" : "FAIL" }')
fi
if [ "$OURS_STATUS" = ok ] && [ "$OVND_STATUS" = ok ]; then
    RATIO_ND=$(awk -v o="$OURS_MEDIAN" -v t="$OVND_MEDIAN" 'BEGIN { printf "%.2f", o / t }')
    VERDICT_ND=$(awk -v r="$RATIO_ND" -v t="$TARGET_RATIO" 'BEGIN { print (r >= t) ? "PASS" : "FAIL" }')
fi

row() {   # row LABEL STATUS MEDIAN RUNS DETAIL MEDIAN_R RUNS_R
    if [ "$2" = ok ]; then
        printf '  %-38s %8.2f %9s   up %s; down %s\n' "$1" "$3" "${6:-n/a}" "$4" "${7:-n/a}"
    else
        printf '  %-38s %8s %9s   %s\n' "$1" "n/a" "n/a" "$5"
    fi
}
echo
echo "IP-layer throughput, iperf3 single TCP stream, median of $RUNS x ${DURATION} s"
printf '  %-38s %8s %9s   %s\n' configuration "up Gbit/s" "down (-R)" "runs (Gbit/s)"
row "baseline veth (wire ceiling)" "$BASE_STATUS" "$BASE_MEDIAN" "$BASE_RUNS" "$BASE_DETAIL" "$BASE_MEDIAN_R" "$BASE_RUNS_R"
row "OpenVPN $OPENVPN_SHORT TCP AES-256-GCM" "$OVPN_STATUS" "$OVPN_MEDIAN" "$OVPN_RUNS" "$OVPN_DETAIL" "$OVPN_MEDIAN_R" "$OVPN_RUNS_R"
[ "$OVND_STATUS" = skipped ] ||
    row "  same, --tcp-nodelay" "$OVND_STATUS" "$OVND_MEDIAN" "$OVND_RUNS" "$OVND_DETAIL" "$OVND_MEDIAN_R" "$OVND_RUNS_R"
row "SimpleTunnel TLS, TUN offloads on" "$OURS_STATUS" "$OURS_MEDIAN" "$OURS_RUNS" "$OURS_DETAIL" "$OURS_MEDIAN_R" "$OURS_RUNS_R"
row "  same tunnel, IPv6 (iperf3 -6)" "$OURS6_STATUS" "$OURS6_MEDIAN" "$OURS6_RUNS" "$OURS6_DETAIL" "$OURS6_MEDIAN_R" "$OURS6_RUNS_R"
[ "$OFF_STATUS" = skipped ] ||
    row "SimpleTunnel TLS, TUN offloads off" "$OFF_STATUS" "$OFF_MEDIAN" "$OFF_RUNS" "$OFF_DETAIL" "$OFF_MEDIAN_R" "$OFF_RUNS_R"
[ -z "${OURS_OFFLOADS:-}" ] || echo "SimpleTunnel server: $OURS_OFFLOADS"
if [ -n "$RATIO" ]; then
    echo "ratio SimpleTunnel/OpenVPN: $RATIO (target >= ${TARGET_RATIO}x): $VERDICT"
else
    echo "ratio SimpleTunnel/OpenVPN: n/a (target >= ${TARGET_RATIO}x): no verdict"
fi
if [ -n "$RATIO_ND" ]; then
    echo "ratio SimpleTunnel/OpenVPN --tcp-nodelay (like for like): $RATIO_ND (>= ${TARGET_RATIO}x: $VERDICT_ND)"
fi
echo "machine: $CPUS cores ($CPU_MODEL), kernel $KERNEL; the cores are shared by the VPN client,"
echo "  the VPN server and both iperf3 ends; load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OpenVPN data channel offload: $([ "$OPENVPN_DCO" = 1 ] && echo allowed || echo disabled)"
[ -z "$OURS_TLS" ] || echo "SimpleTunnel TLS: $OURS_TLS"
if [ -n "$OVPN_NOTES" ]; then
    echo "OpenVPN log notes:"
    sed 's/^/  /' <<<"$OVPN_NOTES"
fi

# --- JSON -------------------------------------------------------------------

json_str() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/ }
    s=${s//$'\n'/\\n}
    printf '"%s"' "$s"
}
json_verdict() { case $1 in PASS) echo true ;; FAIL) echo false ;; *) echo null ;; esac; }
json_num() { [ -n "$1" ] && printf '%s' "$1" || printf null; }
json_result() {   # STATUS MEDIAN RUNS DETAIL [MEDIAN_R RUNS_R]
    printf '{"status": %s, "gbit_per_s_median": %s, "gbit_per_s_runs": [%s], "download_gbit_per_s_median": %s, "download_gbit_per_s_runs": [%s], "detail": %s}' \
        "$(json_str "$1")" "$(json_num "$2")" "$(sed 's/ /, /g' <<<"$3")" "$(json_num "${5:-}")" "$(sed 's/ /, /g' <<<"${6:-}")" "$(json_str "$4")"
}
mkdir -p "$ROOT/benchmark-results"
JSON=$ROOT/benchmark-results/ip-layer.json
{
    printf '{\n'
    printf '  "benchmark": "ip-layer",\n'
    printf '  "date": %s,\n' "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
    printf '  "machine": {"cpus": %s, "cpu_model": %s, "kernel": %s, "note": %s},\n' "$CPUS" \
        "$(json_str "$CPU_MODEL")" "$(json_str "$KERNEL")" \
        "$(json_str "cores shared by VPN client, VPN server and both iperf3 ends")"
    printf '  "load_average_before": %s,\n' "$(json_str "$LOAD_BEFORE")"
    printf '  "load_average_after": %s,\n' "$(json_str "$(cut -d' ' -f1-3 /proc/loadavg)")"
    printf '  "iperf3": %s,\n' "$(json_str "$IPERF_VERSION")"
    printf '  "openvpn": %s,\n' "$(json_str "$OPENVPN_VERSION")"
    printf '  "openvpn_extra_options": %s,\n' "$(json_str "$OPENVPN_EXTRA")"
    printf '  "openvpn_dco": %s,\n' "$([ "$OPENVPN_DCO" = 1 ] && echo true || echo false)"
    printf '  "simpletunnel_tls_cipher": %s,\n' "$(json_str "$OURS_TLS")"
    printf '  "duration_seconds": %s,\n' "$DURATION"
    printf '  "runs": %s,\n' "$RUNS"
    printf '  "results": {\n'
    printf '    "baseline_veth": %s,\n' "$(json_result "$BASE_STATUS" "$BASE_MEDIAN" "$BASE_RUNS" "$BASE_DETAIL" "$BASE_MEDIAN_R" "$BASE_RUNS_R")"
    printf '    "openvpn_tcp_aes_256_gcm": %s,\n' "$(json_result "$OVPN_STATUS" "$OVPN_MEDIAN" "$OVPN_RUNS" "$OVPN_DETAIL" "$OVPN_MEDIAN_R" "$OVPN_RUNS_R")"
    printf '    "openvpn_tcp_aes_256_gcm_tcp_nodelay": %s,\n' "$(json_result "$OVND_STATUS" "$OVND_MEDIAN" "$OVND_RUNS" "$OVND_DETAIL" "$OVND_MEDIAN_R" "$OVND_RUNS_R")"
    printf '    "simpletunnel_tls": %s,\n' "$(json_result "$OURS_STATUS" "$OURS_MEDIAN" "$OURS_RUNS" "$OURS_DETAIL" "$OURS_MEDIAN_R" "$OURS_RUNS_R")"
    printf '    "simpletunnel_tls_tun_offloads_off": %s,\n' "$(json_result "$OFF_STATUS" "$OFF_MEDIAN" "$OFF_RUNS" "$OFF_DETAIL" "$OFF_MEDIAN_R" "$OFF_RUNS_R")"
    printf '    "simpletunnel_tls_ipv6": %s\n' "$(json_result "$OURS6_STATUS" "$OURS6_MEDIAN" "$OURS6_RUNS" "$OURS6_DETAIL" "$OURS6_MEDIAN_R" "$OURS6_RUNS_R")"
    printf '  },\n'
    printf '  "ratio_simpletunnel_over_openvpn": %s,\n' "$(json_num "$RATIO")"
    printf '  "target_ratio": %s,\n' "$TARGET_RATIO"
    printf '  "pass": %s,\n' "$(json_verdict "$VERDICT")"
    printf '  "ratio_simpletunnel_over_openvpn_tcp_nodelay": %s,\n' "$(json_num "$RATIO_ND")"
    printf '  "pass_tcp_nodelay": %s\n' "$(json_verdict "$VERDICT_ND")"
    printf '}\n'
} >"$JSON"
echo "results: ${JSON#"$ROOT"/}"
