#!/usr/bin/env bash
# IP-layer VPN throughput and CPU cost: iperf3 TCP through SimpleTunnel's IP
# tunnel, wireguard-go (userspace) and OpenVPN 2.6 (TCP, AES-256-GCM), in the
# same namespace topology, run back to back, with the bare veth path as the
# ceiling. Every configuration is measured with one stream and with STREAMS
# parallel streams (iperf3 -P), upload (client -> destination) and download
# (iperf3 -R); SimpleTunnel with its TUN offloads on and super-packets carried
# whole (the default), with offloads on but MTU-sized packets on the wire
# (tunnel-client ip --no-super-packets), and with offloads off
# (SIMPLETUNNEL_TUN_OFFLOAD=off on both ends), and its IPv6 throughput
# (iperf3 -6, one stream) through the same tunnel and over the bare path.
#
# Retransmissions: the TCP segments iperf3's sender retransmitted, summed
# over the runs: loss (or reordering) inside each tunnel, which the bare path
# shows for comparison. Ours with eight streams downloading loses at its IP
# queue's limit (4 MiB by default: 4 ms at 8 Gbit/s, under CoDel's 5 ms
# target); `--tunnel-buffer-mib 16` on the server took that from about
# 100,000 segments to about 1,000 here.
#
# CPU: for each side of each tunnel (the VPN client's and the VPN server's
# process), the CPU seconds (user + system, all threads, from /proc/PID/stat)
# spent per GB that iperf3 received, over all runs of a measurement. Kernel
# work done on the process's behalf in softirq context (forwarding, veth) is
# not counted; the bare path has no tunnel process and shows none.
#
# What limits our IP path (PERF=record, cpu-clock samples: this VM exposes no
# hardware counters, so cost is told in CPU time, not instructions): CPU. On
# 2 cores both tunnel processes, both iperf3 ends and the kernel's forwarding
# share the machine. With super-packets carried whole (PROTOCOL.md B8) each
# of our processes spends about 1.1-1.5 s per GB (wireguard-go 9-12 s,
# OpenVPN 12-18 s; MTU-sized packets on the wire cost us 2-3 s): about a
# third is the kernel (TUN and socket copies, wake-ups), a quarter OpenSSL's
# AES-GCM, and the rest our code, the Swift runtime and libc (a third of that
# memmove: OpenSSL's record copies and our gathering of frame pieces into
# records). A `packets` message costs about 3,700 instructions to write and
# 3,500 to read for one super-packet (Benchmarks/wire-instructions.sh): no
# property-list values are built for our own peers' layout. Per-packet work
# (the split, the merge, their checksums) remains only for a peer that takes
# no super-packets. Not loss: the tunnel's queue drops by waiting time
# (CoDel), and one stream through it sees no retransmission (the
# retransmission table); not wake-ups: the client reads its device on the
# tunnel's loop, and fewer context switches (perf stat: about 3.5x fewer in
# the client) moved throughput by no more than the noise.
#
# IPv6 inside the tunnel runs at about 0.75x of IPv4 (the bare path: about
# 0.9x). perf stat counts the same system calls per GB both ways (reads,
# writes and writevs); the extra CPU is kernel time (softirq work such as the
# IPv6 forwarding and the receiving socket's processing, charged to whichever
# of our processes wrote the packet), not more work in ours.
#
# Targets printed at the end (one stream, upload): SimpleTunnel >= 5x
# wireguard-go, >= 0.18x the bare path, >= 2x OpenVPN; download within 20%
# of upload.
#
#   sudo Benchmarks/ip-layer.sh
#   sudo DURATION=10 RUNS=3 Benchmarks/ip-layer.sh
#
# Environment overrides:
#   DURATION=5        seconds per iperf3 run
#   RUNS=2            runs per measurement; the median is reported
#   STREAMS=8         parallel streams of the second measurement; 0 skips it
#   BUILD=1           build tunnel-server and tunnel-client (swift build -c
#                     release) first when swift is installed; 0 skips the build
#   BIN_DIR=DIR       where tunnel-server and tunnel-client are (default: the
#                     release bin path of this checkout)
#   WIREGUARD=1       measure wireguard-go; 0 skips it
#   OPENVPN_DCO=0     1 lets OpenVPN use data channel offload when the kernel
#                     has it; the default passes --disable-dco (userspace, like us)
#   OPENVPN_NODELAY=0 1 also measures OpenVPN with --tcp-nodelay (SwiftNIO sets
#                     TCP_NODELAY on our sockets)
#   OPENVPN_EXTRA=    more options for both OpenVPN ends, e.g. "--tcp-nodelay"
#   OURS_TUN_ADDRESS=10.90.0.1   tunnel-server --tun-address
#   OURS_MTU=         --mtu for tunnel-server and tunnel-client when set
#                     (their default is 1400)
#   OURS_OFFLOAD_OFF=1  also measure SimpleTunnel with TUN offloads off; 0 skips it
#   OURS_SEGMENTS=1   also measure SimpleTunnel with offloads on but MTU-sized
#                     packets on the wire (--no-super-packets); 0 skips it
#   COMPARE_BIN_DIR=  also measure the tunnel-server and tunnel-client in this
#                     directory (offloads on), e.g. a build from before a change,
#                     so that before and after are measured in one run
#   PERF=             "record" or "stat": perf the tunnel-server and
#                     tunnel-client processes during SimpleTunnel's first
#                     one-stream upload and download runs (offloads on, over
#                     IPv4 and over IPv6), into perf-TAG-KIND-SIDE.*; the
#                     output stays in the work directory (KEEP_WORK=1 is implied)
#   KEEP_WORK=1       keep the temporary directory (logs, PKI, iperf3 JSON)
#
# Requirements: root, Linux with network namespaces and /dev/net/tun, and
# apt-get if openvpn (2.6.x), wireguard-go, wg (wireguard-tools), iperf3,
# iproute2 or openssl is missing (the script installs them). Default runtime
# is about 5 minutes (plus the build).
#
# Topology (everything inside namespaces this script creates and deletes on
# exit; the root namespace's addresses, routes and firewall are not touched):
#
#   stb-cli-R  veth 198.18.1.2/24 --- 198.18.1.1/24  stb-srv-R  198.18.2.1/24 --- 198.18.2.2/24  stb-dst-R
#   (iperf3 -c, VPN clients)              (VPN servers, ip_forward=1)              (iperf3 -s)
#
#   baseline:      client ns routes 198.18.2.0/24 via 198.18.1.1 (plain forwarding)
#                  (and fd00:2::/64 via fd00:1::1 for its IPv6 row)
#   wireguard-go:  userspace wireguard-go in the client and server namespaces,
#                  10.92.0.0/24 inside, UDP 198.18.1.1:51820 outside, MTU 1420;
#                  the client routes 198.18.2.0/24 through it
#   OpenVPN:       pool 10.91.0.0/24, pushes route 198.18.2.0/24; run with its
#                  defaults (and with --tcp-nodelay when OPENVPN_NODELAY=1)
#   SimpleTunnel:  pool 10.90.0.2-10.90.0.250, pushes route 198.18.2.0/24; IPv6 pool
#                  fd00:90::2-fd00:90::fa, pushes fd00:2::/64 (destination fd00:2::2,
#                  links fd00:1::/64 and fd00:2::/64 beside the IPv4 ones)
#
# Results also go to benchmark-results/ip-layer.json (git-ignored).
# Exit status: 0 when the benchmark ran (whatever the targets say), 1 on setup errors.
set -euo pipefail

DURATION=${DURATION:-5}
RUNS=${RUNS:-2}
STREAMS=${STREAMS:-8}
WIREGUARD=${WIREGUARD:-1}
PERF=${PERF:-}
BUILD=${BUILD:-1}
OPENVPN_DCO=${OPENVPN_DCO:-0}
OURS_TUN_ADDRESS=${OURS_TUN_ADDRESS:-10.90.0.1}
OURS_MTU=${OURS_MTU:-}
KEEP_WORK=${KEEP_WORK:-0}
OPENVPN_NODELAY=${OPENVPN_NODELAY:-0}
OPENVPN_EXTRA=${OPENVPN_EXTRA:-}
OURS_OFFLOAD_OFF=${OURS_OFFLOAD_OFF:-1}
OURS_SEGMENTS=${OURS_SEGMENTS:-1}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=Benchmarks/bench-files.sh
. "$ROOT/Benchmarks/bench-files.sh"

die() { echo "ip-layer.sh: $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

case "$DURATION" in '' | *[!0-9]* | 0) die "DURATION must be a whole number of seconds" ;; esac
case "$RUNS" in '' | *[!0-9]* | 0) die "RUNS must be a positive whole number" ;; esac
case "$STREAMS" in '' | *[!0-9]*) die "STREAMS must be a whole number (0 skips the parallel measurement)" ;; esac
case "$PERF" in '' | record | stat) ;; *) die "PERF must be record or stat" ;; esac
[ -z "$PERF" ] || KEEP_WORK=1
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
    if [ "$WIREGUARD" = 1 ]; then
        command -v wireguard-go >/dev/null || missing+=(wireguard-go)
        command -v wg >/dev/null || missing+=(wireguard-tools)
    fi
    if [ -n "$PERF" ] && ! command -v perf >/dev/null; then missing+=(linux-perf); fi
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
    # Return paths from the destination: the client veth (baseline) and the VPNs' addresses.
    ip -n "$DST" route add 198.18.1.0/24 via 198.18.2.1
    ip -n "$DST" route add 10.91.0.0/24 via 198.18.2.1
    ip -n "$DST" route add 10.90.0.0/24 via 198.18.2.1
    ip -n "$DST" route add 10.92.0.0/24 via 198.18.2.1
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

# iperf_received FILE KEY: KEY (bits_per_second or bytes) of what the receiver
# got in all streams, from iperf3 -J output, or fails.
iperf_received() {
    grep -q '"error"' "$1" && return 1
    awk -F: -v key="\"$2\"" '
        /"sum_received"[[:space:]]*:/ { inside = 1 }
        inside && index($1, key) { gsub(/[^0-9.eE+-]/, "", $2); print $2; found = 1; exit }
        END { exit !found }' "$1"
}

# iperf_retransmits FILE: TCP segments the sender retransmitted, all streams (0 when iperf3 does not say).
iperf_retransmits() {
    awk -F: '
        /"sum_sent"[[:space:]]*:/ { inside = 1 }
        inside && index($1, "\"retransmits\"") { gsub(/[^0-9]/, "", $2); print $2 + 0; found = 1; exit }
        END { if (!found) print 0 }' "$1"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# iperf_run OUT ADDRESS [IPERF3_OPTION...]: one client run to ADDRESS; waits for the server to
# finish the previous test first (iperf3 3.12 can still be "busy" just after its client exits).
iperf_run() {
    local out=$1 target=$2 attempt rc
    shift 2
    for attempt in 1 2 3; do
        wait_for 5 iperf_idle || true
        rc=0
        run_bounded $((DURATION + 20)) "$out" \
            ip netns exec "$CLI" iperf3 -c "$target" -p "$IPERF_PORT" -t "$DURATION" -J --connect-timeout 5000 "$@" || rc=$?
        grep -q 'server is busy' "$out" || return $rc
        note "iperf3 server still busy with the previous test; retrying"
        sleep 1
    done
    return 1
}

# --- results ----------------------------------------------------------------

# Measurements: one stream up and down (-R), STREAMS streams (-P) up and down.
KINDS=(up1 down1)
[ "$STREAMS" -gt 0 ] && KINDS+=(upP downP)
kind_name() {
    case $1 in
        up1) echo "1 up" ;; down1) echo "1 down" ;;
        upP) echo "$STREAMS up" ;; downP) echo "$STREAMS down" ;;
    esac
}
# By configuration tag (CONFIGS, in the order measured) and tag/kind:
# Gbit/s median and runs, CPU seconds per GB of the client's and the server's tunnel process.
CONFIGS=()
declare -A NAME=() STATUS=() DETAIL=() MEDIAN=() RUNLIST=() CPU_CLI=() CPU_SRV=() RETRANSMITS=()
# add_config TAG NAME: a configuration about to be measured (failed until its measurement says).
add_config() { CONFIGS+=("$1"); NAME[$1]=$2; STATUS[$1]=failed; DETAIL[$1]=""; }
# config_failed TAG DETAIL
config_failed() { STATUS[$1]=failed; DETAIL[$1]=$2; }

# The tunnel processes whose CPU time the next measurements count (empty: none).
CPU_CLI_PID="" CPU_SRV_PID=""
CLK_TCK=$(getconf CLK_TCK)
# cpu_ticks PID: user + system clock ticks of all the process's threads so far (empty without PID).
cpu_ticks() {
    [ -n "$1" ] || return 0
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}
# per_gb TICKS BYTES: CPU seconds per GB (1e9 bytes), or empty.
per_gb() {
    [ -n "$1" ] && [ "${2:-0}" -gt 0 ] || return 0
    awk -v t="$1" -v b="$2" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f\n", (t / hz) / (b / 1e9) }'
}

# perf_start TAG KIND RUN: with PERF set, perf the tunnel processes during SimpleTunnel's first
# one-stream upload and download runs, IPv4 and IPv6; PERF_PIDS are the perf processes to wait for afterwards.
PERF_PIDS=()
perf_start() {
    PERF_PIDS=()
    [ -n "$PERF" ] || return 0
    case "$1/$2/$3" in ours-on/up1/1 | ours-on/down1/1 | ours-v6/up1/1 | ours-v6/down1/1) ;; *) return 0 ;; esac
    local side pid out
    for side in client server; do
        [ $side = client ] && pid=$CPU_CLI_PID || pid=$CPU_SRV_PID
        [ -n "$pid" ] || continue
        out=$WORK/perf-$1-$2-$side
        if [ "$PERF" = record ]; then
            perf record -F 499 -g -p "$pid" -o "$out.data" -- sleep "$DURATION" >"$out.log" 2>&1 &
        else
            perf stat -e task-clock,cycles,instructions,context-switches,page-faults,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev -p "$pid" -o "$out.txt" -- sleep "$DURATION" >"$out.log" 2>&1 &
        fi
        PERF_PIDS+=($!)
        LIVE[$!]=perf
    done
}
perf_finish() {
    local pid
    for pid in "${PERF_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; unset "LIVE[$pid]"; done
    [ ${#PERF_PIDS[@]} -eq 0 ] || note "perf $PERF output: $WORK/perf-$3-$2-client.* and $WORK/perf-$3-$2-server.* (bytes received: $1)"
    PERF_PIDS=()
}

# measure_kind TAG KIND ADDRESS: RUNS iperf3 runs of one kind from the client namespace to ADDRESS;
# records the median, the runs and the CPU per GB of CPU_CLI_PID and CPU_SRV_PID over all runs.
measure_kind() {
    local tag=$1 kind=$2 target=$3 run out gbps bytes options=() runs=""
    local c0 s0 c1 s1 cli_ticks=0 srv_ticks=0 total=0 retransmits=0
    case $kind in down*) options+=(-R) ;; esac
    case $kind in *P) options+=(-P "$STREAMS") ;; esac
    for run in $(seq 1 "$RUNS"); do
        out=$WORK/iperf-$tag-$kind-$run.json
        c0=$(cpu_ticks "$CPU_CLI_PID") s0=$(cpu_ticks "$CPU_SRV_PID")
        perf_start "$tag" "$kind" "$run"
        if iperf_run "$out" "$target" "${options[@]}" && gbps=$(iperf_received "$out" bits_per_second) &&
            bytes=$(iperf_received "$out" bytes); then
            c1=$(cpu_ticks "$CPU_CLI_PID") s1=$(cpu_ticks "$CPU_SRV_PID")
            bytes=${bytes%%.*}
            gbps=$(awk -v b="$gbps" 'BEGIN { printf "%.3f", b / 1e9 }')
            printf '  %-14s %-8s run %d: %7.3f Gbit/s\n' "$tag" "$(kind_name "$kind")" "$run" "$gbps"
            runs="$runs${runs:+ }$gbps"
            total=$((total + bytes))
            retransmits=$((retransmits + $(iperf_retransmits "$out")))
            [ -n "$c0" ] && [ -n "$c1" ] && cli_ticks=$((cli_ticks + c1 - c0))
            [ -n "$s0" ] && [ -n "$s1" ] && srv_ticks=$((srv_ticks + s1 - s0))
        else
            printf '  %-14s %-8s run %d: failed: %s\n' "$tag" "$(kind_name "$kind")" "$run" \
                "$(grep -o '"error"[^,}]*' "$out" 2>/dev/null | head -n 1 || tail -n 1 "$out")"
        fi
        perf_finish "${bytes:-?}" "$kind" "$tag"
    done
    RUNLIST[$tag/$kind]=$runs
    RETRANSMITS[$tag/$kind]=$retransmits
    MEDIAN[$tag/$kind]=$(tr ' ' '\n' <<<"$runs" | grep . | median || true)
    CPU_CLI[$tag/$kind]="" CPU_SRV[$tag/$kind]=""
    [ -n "$CPU_CLI_PID" ] && CPU_CLI[$tag/$kind]=$(per_gb "$cli_ticks" "$total")
    [ -n "$CPU_SRV_PID" ] && CPU_SRV[$tag/$kind]=$(per_gb "$srv_ticks" "$total")
    return 0
}

# measure TAG [ADDRESS [KIND...]]: every kind (default: KINDS) to DST_ADDR or ADDRESS; the
# configuration is ok when its one-stream upload has a median.
measure() {
    local tag=$1 target=${2:-$DST_ADDR} kind
    shift $(($# < 2 ? $# : 2))
    local kinds=("$@")
    [ ${#kinds[@]} -gt 0 ] || kinds=("${KINDS[@]}")
    for kind in "${kinds[@]}"; do measure_kind "$tag" "$kind" "$target"; done
    if [ -n "${MEDIAN[$tag/up1]}" ]; then STATUS[$tag]=ok; else config_failed "$tag" "every one-stream upload run failed"; fi
}

# --- baseline ---------------------------------------------------------------

run_baseline() {
    echo "baseline: client -> server namespace (forwarding) -> destination, no tunnel"
    add_config baseline "bare veth path (the ceiling)"
    ip -n "$CLI" route add 198.18.2.0/24 via 198.18.1.1
    start_iperf_server
    CPU_CLI_PID="" CPU_SRV_PID=""
    measure baseline
    stop_iperf_server
    ip -n "$CLI" route del 198.18.2.0/24 via 198.18.1.1
    # The same path over IPv6, one stream: the ceiling the tunnel's IPv6 row compares with.
    add_config baseline-v6 "  same path, IPv6 (iperf3 -6)"
    ip -n "$CLI" -6 route add fd00:2::/64 via fd00:1::1
    ip -n "$DST" -6 route add fd00:1::/64 via fd00:2::1
    start_iperf_server "$DST_ADDR6"
    measure baseline-v6 "$DST_ADDR6" up1 down1
    stop_iperf_server
    ip -n "$CLI" -6 route del fd00:2::/64 via fd00:1::1
    ip -n "$DST" -6 route del fd00:1::/64 via fd00:2::1
}

# --- wireguard-go -----------------------------------------------------------

# run_wireguard: userspace wireguard-go in the server and client namespaces (UAPI
# sockets in /var/run/wireguard, named after this run's devices).
run_wireguard() {
    local d=$WORK/wireguard sdev=wgs-$SUFFIX cdev=wgc-$SUFFIX server_pid client_pid version
    version=$(wireguard-go --version 2>/dev/null | head -n 1 || true)
    echo "wireguard-go: ${version:-unknown version}, userspace in both namespaces, UDP 198.18.1.1:51820"
    add_config wireguard "wireguard-go (userspace)"
    mkdir -p "$d"
    (umask 077 && wg genkey >"$d/server.key" && wg genkey >"$d/client.key")
    wg pubkey <"$d/server.key" >"$d/server.pub"
    wg pubkey <"$d/client.key" >"$d/client.pub"
    # Debian's build refuses to run on Linux (where a kernel module exists) unless told so.
    start_bg wireguard-go-server "$d/server.log" ip netns exec "$SRV" \
        env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 wireguard-go -f "$sdev"
    server_pid=$BG_PID
    start_bg wireguard-go-client "$d/client.log" ip netns exec "$CLI" \
        env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 wireguard-go -f "$cdev"
    client_pid=$BG_PID
    wg_ready() { [ -S "/var/run/wireguard/$sdev.sock" ] && [ -S "/var/run/wireguard/$cdev.sock" ] || ! alive "$server_pid" || ! alive "$client_pid"; }
    wait_for 10 wg_ready || true
    if ! alive "$server_pid" || ! alive "$client_pid" ||
        ! ip netns exec "$SRV" wg set "$sdev" listen-port 51820 private-key "$d/server.key" \
            peer "$(cat "$d/client.pub")" allowed-ips 10.92.0.2/32 >>"$d/server.log" 2>&1 ||
        ! ip netns exec "$CLI" wg set "$cdev" private-key "$d/client.key" \
            peer "$(cat "$d/server.pub")" endpoint 198.18.1.1:51820 allowed-ips 10.92.0.0/24,198.18.2.0/24 >>"$d/client.log" 2>&1; then
        config_failed wireguard "wireguard-go did not start or could not be configured"
        echo "  ${DETAIL[wireguard]}; last log lines:"
        tail -n 8 "$d/server.log" "$d/client.log" | sed 's/^/    /'
        stop_pids "$client_pid" "$server_pid"
        return 0
    fi
    ip -n "$SRV" addr add 10.92.0.1/24 dev "$sdev"
    ip -n "$SRV" link set "$sdev" mtu 1420 up
    ip -n "$CLI" addr add 10.92.0.2/24 dev "$cdev"
    ip -n "$CLI" link set "$cdev" mtu 1420 up
    ip -n "$CLI" route add 198.18.2.0/24 dev "$cdev"
    echo "  up: $cdev 10.92.0.2/24, route to $DST_ADDR via $(route_dev), tun mtu $(tun_mtu "$cdev")"
    start_iperf_server
    CPU_CLI_PID=$client_pid CPU_SRV_PID=$server_pid
    measure wireguard
    stop_iperf_server
    ip -n "$CLI" route del 198.18.2.0/24 dev "$cdev" 2>/dev/null || true
    stop_pids "$client_pid" "$server_pid"
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

# run_openvpn TAG NAME [SERVER_OPTION...]: one OpenVPN configuration (OPENVPN_EXTRA
# goes to both ends, SERVER_OPTIONs to the server, which pushes what the
# client needs, e.g. --tcp-nodelay); adds to OVPN_NOTES.
OVPN_NOTES=""
run_openvpn() {
    local tag=$1
    add_config "$tag" "$2"
    shift 2
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
        config_failed "$tag" "client did not reach 'Initialization Sequence Completed' within 30 s"
        echo "  ${DETAIL[$tag]}; last server and client log lines:"
        tail -n 8 "$slog" "$clog" | sed 's/^/    /'
    else
        dev=$(route_dev)
        if [ "${dev#tun}" = "$dev" ]; then
            config_failed "$tag" "the route to $DST_ADDR does not use the OpenVPN TUN (dev ${dev:-none})"
            echo "  ${DETAIL[$tag]}"
        else
            echo "  up: $(ip -n "$CLI" -4 -o addr show dev "$dev" | awk '{ print $2, $4 }'), route to $DST_ADDR via $dev, tun mtu $(tun_mtu "$dev")"
            start_iperf_server
            CPU_CLI_PID=$client_pid CPU_SRV_PID=$server_pid
            measure "$tag"
            stop_iperf_server
        fi
    fi
    OVPN_NOTES=$({ echo "$OVPN_NOTES"; cat "$slog" "$clog" |
        grep -E 'DEPRECATED|WARNING|Note:|Data Channel: cipher|DCO version' |
        sed -E 's#^[0-9-]+ [0-9:]+ ##; s#^([^ ]*/)?[0-9]+(\.[0-9]+){3}:[0-9]+ ##'; } | grep . | sort -u || true)
    stop_pids "$client_pid" "$server_pid"
}

# --- SimpleTunnel -----------------------------------------------------------

OURS_TLS="" OURS_OFFLOADS=""
# run_ours on|segments|off|compare: SimpleTunnel with its TUN offloads on and
# super-packets carried whole (the default), offloads on with MTU-sized packets on
# the wire (--no-super-packets), offloads off, or the binaries in COMPARE_BIN_DIR
# as they start by default (configuration ours-on, ours-segments, ours-off or
# ours-compare); with offloads on it also measures the same tunnel over IPv6 (ours-v6)
# and keeps what the server logged of its offloads in OURS_OFFLOADS.
run_ours() {
    local mode=$1 tag=ours-$1 env=() server_bin=$SERVER_BIN client_bin=$CLIENT_BIN client_extra=()
    if [ "$mode" = compare ]; then
        server_bin=$COMPARE_BIN_DIR/tunnel-server client_bin=$COMPARE_BIN_DIR/tunnel-client
        echo "SimpleTunnel from $COMPARE_BIN_DIR, TUN offloads on"
        add_config "$tag" "SimpleTunnel, COMPARE_BIN_DIR build"
    elif [ "$mode" = segments ]; then
        client_extra=(--no-super-packets)
        echo "SimpleTunnel: tunnel-server (TUN, IPv4.Pool) <- TLS over TCP -> tunnel-client ip --no-super-packets, TUN offloads on"
        add_config "$tag" "  offloads on, MTU-sized packets on wire"
    else
        echo "SimpleTunnel: tunnel-server (TUN, IPv4.Pool) <- TLS over TCP -> tunnel-client ip, TUN offloads $mode"
        add_config "$tag" "SimpleTunnel TLS, TUN offloads $mode$([ "$mode" = on ] && echo ", super-packets")"
    fi
    if [ "$mode" = compare ] && { [ ! -x "$server_bin" ] || [ ! -x "$client_bin" ]; }; then
        STATUS[$tag]=unavailable DETAIL[$tag]="no tunnel-server/tunnel-client in $COMPARE_BIN_DIR"
        echo "  ${DETAIL[$tag]}"
        return 0
    elif [ -n "$OURS_UNAVAILABLE" ]; then
        STATUS[$tag]=unavailable DETAIL[$tag]="not available yet: $OURS_UNAVAILABLE"
        echo "  ${DETAIL[$tag]}"
        return 0
    fi
    [ "$mode" = off ] && env=(env SIMPLETUNNEL_TUN_OFFLOAD=off)
    local d=$WORK/ours-$mode server_pid client_pid fingerprint dev="" mtu=()
    mkdir -p "$d/state"
    write_pool_plist "$d/server.plist" 198.18.2.0 fd00:2::
    [ -n "$OURS_MTU" ] && mtu=(--mtu "$OURS_MTU")
    # A generated (pinned) server certificate; client certificates from the
    # benchmark CA, since the server only listens beyond loopback with mutual TLS.
    start_bg tunnel-server "$d/server.log" ip netns exec "$SRV" "${env[@]}" "$server_bin" \
        --host 198.18.1.1 --port 4433 --tun stbsrv0 --tun-address "$OURS_TUN_ADDRESS" "${mtu[@]}" \
        --config "$d/server.plist" --state-directory "$d/state" --client-ca "$WORK/pki/ca.crt"
    server_pid=$BG_PID
    server_ready() {
        { grep -qs 'listening on' "$d/server.log" && grep -Eqs 'SHA-256 [0-9A-Fa-f:]{64,}' "$d/server.log"; } || ! alive "$server_pid"
    }
    wait_for 20 server_ready || true
    fingerprint=$(grep -Eos 'SHA-256 [0-9A-Fa-f:]{64,}' "$d/server.log" | head -n 1 | cut -d' ' -f2 || true)
    if ! alive "$server_pid" || [ -z "$fingerprint" ] || ! grep -qs 'listening on' "$d/server.log"; then
        config_failed "$tag" "tunnel-server did not start (no 'listening on' and 'SHA-256 <hex>' within 20 s)"
        echo "  ${DETAIL[$tag]}; last log lines:"
        tail -n 8 "$d/server.log" | sed 's/^/    /'
        stop_pids "$server_pid"
        return 0
    fi
    start_bg tunnel-client "$d/client.log" ip netns exec "$CLI" "${env[@]}" "$client_bin" ip \
        --server 198.18.1.1:4433 --pin-sha256 "$fingerprint" \
        --cert "$WORK/pki/client.crt" --key "$WORK/pki/client.key" --tun stbcli0 "${mtu[@]}" "${client_extra[@]}"
    client_pid=$BG_PID
    # Up when an address from the pool is on an interface in the client namespace.
    pool_dev() { ip -n "$CLI" -4 -o addr show 2>/dev/null | awk '$4 ~ /^10\.90\.0\./ { print $2; exit }'; }
    client_ready() { [ -n "$(pool_dev)" ] && [ "$(route_dev)" = "$(pool_dev)" ] || ! alive "$client_pid"; }
    wait_for 20 client_ready || true
    alive "$client_pid" && dev=$(pool_dev)
    if [ -z "$dev" ]; then
        config_failed "$tag" "tunnel-client got no address from the pool within 20 s"
        echo "  ${DETAIL[$tag]}; last server and client log lines:"
        tail -n 8 "$d/server.log" "$d/client.log" | sed 's/^/    /'
    elif [ "$(route_dev)" != "$dev" ]; then
        config_failed "$tag" "the route to $DST_ADDR does not use the tunnel's TUN $dev (dev $(route_dev))"
        echo "  ${DETAIL[$tag]}"
    else
        echo "  up: $(ip -n "$CLI" -4 -o addr show dev "$dev" | awk '{ print $2, $4 }'), route to $DST_ADDR via $dev, tun mtu $(tun_mtu "$dev")"
        start_iperf_server
        local offloads
        offloads=$(grep -Eos 'TUN offloads on [^:]*: [^[]*' "$d/server.log" | head -n 1 | sed 's/ *$//' || true)
        [ -z "$offloads" ] || echo "  server: $offloads"
        grep -Eos 'super-packets=[a-z]+' "$d/client.log" | head -n 1 | sed 's/^/  client: /' || true
        [ "$mode" != on ] || OURS_OFFLOADS=$offloads
        CPU_CLI_PID=$client_pid CPU_SRV_PID=$server_pid
        measure "$tag"
        stop_iperf_server
        echo "  TUN queue drops over the runs: client $(tun_drops "$CLI" "$dev"); server $(tun_drops "$SRV" stbsrv0)"
        OURS_TLS=$(grep -Eos 'tls=TLSv[0-9.]+ [A-Z0-9_]+' "$d/server.log" | head -n 1 | cut -d= -f2 || true)
        # The same tunnel, IPv6 (iperf3 -6 to the destination's IPv6 address), one stream.
        if [ "$mode" = on ]; then
            add_config ours-v6 "  same tunnel, IPv6 (iperf3 -6)"
            if ! ip -n "$CLI" -6 route get "$DST_ADDR6" 2>/dev/null | grep -q " dev $dev "; then
                config_failed ours-v6 "the IPv6 route to $DST_ADDR6 does not use the tunnel's TUN $dev"
                echo "  ${DETAIL[ours-v6]}"
            else
                echo "  IPv6: $(ip -n "$CLI" -6 -o addr show dev "$dev" scope global | awk '{ print $4 }'), route to $DST_ADDR6 via $dev"
                start_iperf_server "$DST_ADDR6"
                measure ours-v6 "$DST_ADDR6" up1 down1
                stop_iperf_server
            fi
        fi
    fi
    stop_pids "$client_pid" "$server_pid"
}

# tun_drops NS DEV: packets the kernel dropped at a TUN device: "to the reader"
# (its queue towards the process was full: TX on the device) and "written"
# (packets the process wrote that the kernel refused: RX on the device).
tun_drops() {
    ip -n "$1" -s -j link show dev "$2" 2>/dev/null | python3 -c '
import json, sys
try:
    stats = json.load(sys.stdin)[0]["stats64"]
    print("%d to the reader, %d written" % (stats["tx"]["dropped"], stats["rx"]["dropped"]))
except Exception:
    print("unknown")'
}

# --- run --------------------------------------------------------------------

CPUS=$(nproc)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
KERNEL=$(uname -r)
echo "$OPENVPN_VERSION"
echo "$IPERF_VERSION; TCP, 1 stream$([ "$STREAMS" = 0 ] || echo " and $STREAMS"), ${DURATION} s per run, ${RUNS} runs, median of receiver rate"
echo "namespaces: $CLI, $SRV, $DST"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $LOAD_BEFORE ($CPUS cores)"
awk -v l="${LOAD_BEFORE%% *}" -v c="$CPUS" 'BEGIN { exit !(l > c / 2) }' &&
    note "warning: the machine is busy (load $LOAD_BEFORE on $CPUS cores); expect noisy figures"

setup_topology
make_pki

run_baseline
if [ "$WIREGUARD" = 1 ]; then run_wireguard; fi
run_openvpn openvpn "OpenVPN $OPENVPN_SHORT TCP AES-256-GCM"
# Like for like: SwiftNIO sets TCP_NODELAY on our sockets; OpenVPN's --tcp-nodelay does the same.
if [ "$OPENVPN_NODELAY" = 1 ]; then run_openvpn openvpn-nodelay "  same, --tcp-nodelay" --tcp-nodelay; fi
run_ours on
if [ -n "${COMPARE_BIN_DIR:-}" ]; then run_ours compare; fi
if [ "$OURS_SEGMENTS" = 1 ]; then run_ours segments; fi
if [ "$OURS_OFFLOAD_OFF" = 1 ]; then run_ours off; fi

# --- report -----------------------------------------------------------------

# cell VALUE [FORMAT]: VALUE formatted, or n/a.
cell() { if [ -n "$1" ]; then printf "${2:-%.2f}" "$1"; else printf 'n/a'; fi; }
# ratio A B: A / B to two places, or empty.
ratio() { [ -z "$1" ] || [ -z "$2" ] || awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
# verdict VALUE TARGET: PASS when VALUE >= TARGET, FAIL below, "no verdict" without VALUE.
verdict() {
    if [ -n "$1" ]; then awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "PASS" : "FAIL" }'; else echo "no verdict"; fi
}

echo
echo "IP-layer throughput, Gbit/s, iperf3 TCP, median of $RUNS x ${DURATION} s (down: iperf3 -R$([ "$STREAMS" = 0 ] || echo "; $STREAMS: -P $STREAMS"))"
printf '  %-38s' configuration
for kind in "${KINDS[@]}"; do printf ' %9s' "$(kind_name "$kind")"; done
printf '   %s\n' "runs"
for tag in "${CONFIGS[@]}"; do
    printf '  %-38s' "${NAME[$tag]}"
    if [ "${STATUS[$tag]}" != ok ]; then printf ' %s\n' "${STATUS[$tag]}: ${DETAIL[$tag]}"; continue; fi
    for kind in "${KINDS[@]}"; do printf ' %9s' "$(cell "${MEDIAN[$tag/$kind]:-}")"; done
    printf '   up %s; down %s\n' "${RUNLIST[$tag/up1]:-n/a}" "${RUNLIST[$tag/down1]:-n/a}"
done
echo
echo "CPU seconds per GB received, tunnel client process / tunnel server process (user + system)"
printf '  %-38s' configuration
for kind in "${KINDS[@]}"; do printf ' %13s' "$(kind_name "$kind")"; done
echo
for tag in "${CONFIGS[@]}"; do
    [ "${STATUS[$tag]}" = ok ] && [ "${tag#baseline}" = "$tag" ] || continue
    printf '  %-38s' "${NAME[$tag]}"
    for kind in "${KINDS[@]}"; do
        printf ' %13s' "$(cell "${CPU_CLI[$tag/$kind]:-}")/$(cell "${CPU_SRV[$tag/$kind]:-}")"
    done
    echo
done
echo

echo "TCP segments the sender retransmitted, over all runs (loss or reordering on the path)"
printf '  %-38s' configuration
for kind in "${KINDS[@]}"; do printf ' %13s' "$(kind_name "$kind")"; done
echo
for tag in "${CONFIGS[@]}"; do
    [ "${STATUS[$tag]}" = ok ] || continue
    printf '  %-38s' "${NAME[$tag]}"
    for kind in "${KINDS[@]}"; do printf ' %13s' "${RETRANSMITS[$tag/$kind]:--}"; done
    echo
done
echo

OURS=${MEDIAN[ours-on/up1]:-}
RATIO_WG=$(ratio "$OURS" "${MEDIAN[wireguard/up1]:-}")
RATIO_BARE=$(ratio "$OURS" "${MEDIAN[baseline/up1]:-}")
RATIO_OVPN=$(ratio "$OURS" "${MEDIAN[openvpn/up1]:-}")
DOWN_OVER_UP=$(ratio "${MEDIAN[ours-on/down1]:-}" "$OURS")
DOWN_WITHIN=""
[ -z "$DOWN_OVER_UP" ] || DOWN_WITHIN=$(awk -v r="$DOWN_OVER_UP" 'BEGIN { print (r >= 0.8 && r <= 1.25) ? "PASS" : "FAIL" }')
echo "SimpleTunnel (offloads on), one stream upload, against:"
echo "  wireguard-go:  ${RATIO_WG:-n/a}${RATIO_WG:+x} (target >= 5x): $(verdict "$RATIO_WG" 5)"
echo "  the bare path: ${RATIO_BARE:-n/a}${RATIO_BARE:+x} (target >= 0.18x): $(verdict "$RATIO_BARE" 0.18)"
echo "  OpenVPN:       ${RATIO_OVPN:-n/a}${RATIO_OVPN:+x} (target >= 2x): $(verdict "$RATIO_OVPN" 2)"
echo "  its download:  ${DOWN_OVER_UP:-n/a}${DOWN_OVER_UP:+x} the upload (target within 20%): ${DOWN_WITHIN:-no verdict}"
RATIO_BARE6=$(ratio "${MEDIAN[ours-v6/up1]:-}" "${MEDIAN[baseline-v6/up1]:-}")
echo "  over IPv6:     ${RATIO_BARE6:-n/a}${RATIO_BARE6:+x} the bare IPv6 path (no target; IPv4's is 0.18x)"
echo "machine: $CPUS cores ($CPU_MODEL), kernel $KERNEL; the cores are shared by the VPN client,"
echo "  the VPN server and both iperf3 ends; load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OpenVPN data channel offload: $([ "$OPENVPN_DCO" = 1 ] && echo allowed || echo disabled)"
[ -z "$OURS_OFFLOADS" ] || echo "SimpleTunnel server: $OURS_OFFLOADS"
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
json_num() { if [ -n "$1" ]; then printf '%s' "$1"; else printf null; fi; }
json_verdict() { case $1 in PASS) echo true ;; FAIL) echo false ;; *) echo null ;; esac; }
json_config() {   # TAG
    local tag=$1 kind sep=""
    printf '{"name": %s, "status": %s, "detail": %s' "$(json_str "${NAME[$tag]# *}")" "$(json_str "${STATUS[$tag]}")" "$(json_str "${DETAIL[$tag]}")"
    for kind in "${KINDS[@]}"; do
        [ -n "${RUNLIST[$tag/$kind]+set}" ] || continue
        printf ', "%s": {"gbit_per_s_median": %s, "gbit_per_s_runs": [%s], "cpu_s_per_gb_client": %s, "cpu_s_per_gb_server": %s}' \
            "${kind/P/$STREAMS}" "$(json_num "${MEDIAN[$tag/$kind]:-}")" "$(sed 's/ /, /g' <<<"${RUNLIST[$tag/$kind]}")" \
            "$(json_num "${CPU_CLI[$tag/$kind]:-}")" "$(json_num "${CPU_SRV[$tag/$kind]:-}")"
    done
    printf '}'
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
    printf '  "parallel_streams": %s,\n' "$STREAMS"
    printf '  "results": {'
    sep=""
    for tag in "${CONFIGS[@]}"; do
        printf '%s\n    "%s": %s' "$sep" "$tag" "$(json_config "$tag")"
        sep=,
    done
    printf '\n  },\n'
    printf '  "ratio_over_wireguard_go": %s,\n' "$(json_num "$RATIO_WG")"
    printf '  "pass_wireguard_go_5x": %s,\n' "$(json_verdict "$(verdict "$RATIO_WG" 5)")"
    printf '  "ratio_over_bare_path": %s,\n' "$(json_num "$RATIO_BARE")"
    printf '  "pass_bare_path_0_18x": %s,\n' "$(json_verdict "$(verdict "$RATIO_BARE" 0.18)")"
    printf '  "ratio_over_openvpn": %s,\n' "$(json_num "$RATIO_OVPN")"
    printf '  "pass_openvpn_2x": %s,\n' "$(json_verdict "$(verdict "$RATIO_OVPN" 2)")"
    printf '  "download_over_upload": %s\n' "$(json_num "$DOWN_OVER_UP")"
    printf '}\n'
} >"$JSON"
echo "results: ${JSON#"$ROOT"/}"
