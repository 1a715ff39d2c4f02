#!/usr/bin/env bash
# Prints what one forwarded flow costs the forwarding processes (release
# build), beside ssh -L and the bare SwiftNIO relay (Benchmarks/RelayFloor):
# steadier than flows per second on a shared machine.
#   CPU per flow    every setup, run normally: the on-CPU time (user and kernel,
#                   /proc/PID/task/*/schedstat) its processes spent on CPU_FLOWS flows
#                   after a warm-up, divided by them
#   instructions    ours and relay, under callgrind (user space only): each runs twice,
#                   for SHORT and LONG flows, and one flow's count is the difference over
#                   the difference in flows, so start-up, the handshake and idle timers
#                   are left out. (sshd's pre-auth sandbox cannot run under valgrind.)
# A flow is what app-layer.sh's flows/s counts: connect to the forwarded port,
# send 64 bytes, read the echo, close (Benchmarks/flow_rate.c, one at a time).
#   ours    tunnel-client forward + tunnel-server (both counted)
#   ssh     ssh -N -L + sshd and the session processes it forks (all counted)
#   relay   RelayFloor (one process, no TLS, no tunnel)
# Needs valgrind, cc, sshd and ssh; run as root (sshd). Takes a few minutes.
#   sudo Benchmarks/flow-instructions.sh
#   SHORT=100 LONG=600 SETUPS="ours relay" SKIP_BUILD=1 sudo -E Benchmarks/flow-instructions.sh
#   PROFILES=/tmp/p SETUPS=ours ...   keep the LONG run's callgrind files (callgrind_annotate /tmp/p/callgrind.PID)
#   OURS_BIN=DIR ...   run tunnel-server and tunnel-client from DIR (a saved build, to compare before
#                      and after back to back); RelayFloor still comes from the release build
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SHORT=${SHORT:-100}
LONG=${LONG:-500}
CPU_FLOWS=${CPU_FLOWS:-3000}
SETUPS=${SETUPS:-ours ssh relay}
source Benchmarks/bench-files.sh

for program in valgrind cc python3; do
    command -v "$program" >/dev/null || { echo "needs $program" >&2; exit 2; }
done
if [ -z "${SKIP_BUILD:-}" ]; then
    swift build -c release --product tunnel-server | grep -E "error|warning: unre" || true
    swift build -c release --product tunnel-client | grep -E "error|warning: unre" || true
    swift build -c release --product RelayFloor | grep -E "error|warning: unre" || true
fi
BIN=$(swift build -c release --show-bin-path)
OURS_BIN=${OURS_BIN:-$BIN}
WORK=$(mktemp -d /tmp/flow-instructions.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    # PROFILES=DIR keeps the last LONG run's callgrind files, for callgrind_annotate.
    if [ -n "${PROFILES:-}" ]; then mkdir -p "$PROFILES" && cp "$WORK"/callgrind.* "$PROFILES"/ 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# valgrind 3.19 cannot read the toolchain's DWARF 5 debug info.
for program in tunnel-server tunnel-client; do
    strip --strip-debug -o "$WORK/$program" "$OURS_BIN/$program"
done
strip --strip-debug -o "$WORK/RelayFloor" "$BIN/RelayFloor"
cc -O2 -pthread -o "$WORK/flow-rate" Benchmarks/flow_rate.c
source Benchmarks/flow-bench.sh
MODE=cpu
grind() {  # grind LOG PROGRAM ARGS...: in the background; under callgrind (children too) in MODE=instructions
    local log=$1; shift
    if [ "$MODE" = instructions ]; then
        valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$WORK/callgrind.%p" "$@" >"$log" 2>&1 &
    else
        "$@" >"$log" 2>&1 &
    fi
    PIDS+=($!)
}
tree() {  # the process and its descendants
    local child
    echo "$1"
    for child in $(pgrep -P "$1" 2>/dev/null || true); do tree "$child"; done
}
on_cpu_ns() {  # nanoseconds on CPU of every thread of the trees of PIDS (the setup's processes)
    local pid total=0 ns
    for pid in $(for root in "${PIDS[@]}"; do tree "$root"; done); do
        for ns in $(cat /proc/"$pid"/task/*/schedstat 2>/dev/null | awk '{ print $1 }'); do total=$(( total + ns )); done
    done
    echo "$total"
}
measure() {  # measure PORT COUNT: flows, and what they cost (instructions are read at the end)
    if [ "$MODE" = instructions ]; then
        flows "$1" "$2"
    else
        flows "$1" 50   # warm-up
        local before after
        before=$(on_cpu_ns)
        flows "$1" "$CPU_FLOWS"
        after=$(on_cpu_ns)
        echo $(( (after - before) / CPU_FLOWS )) >"$WORK/cpu"
    fi
}
result() {  # what a run prints: microseconds of CPU per flow, or the instructions LOG... collected
    if [ "$MODE" = instructions ]; then collected "$@"; else awk '{ printf "%.1f", $1 / 1000 }' "$WORK/cpu"; fi
}
collected() {  # the instructions every process of LOG... counted
    cat "$@" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | awk '{ total += $1 } END { printf "%d", total }'
}
stop_all() {  # SIGTERM, then wait for valgrind to write its counts
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

start_echo_server
trap 'kill $ECHO_PID 2>/dev/null || true; cleanup' EXIT

# One run of a setup for COUNT flows; prints the instructions its processes counted.
run_ours() {
    local count=$1 port fp local_port
    grind "$WORK/server.log" "$WORK/tunnel-server" --port 0 --no-ip-layer --state-directory "$WORK/state" --log-level notice \
        --control "$WORK/server.sock"
    wait_for "$WORK/server.log" "listening on"
    wait_for "$WORK/server.log" "SHA-256"
    port=$(server_port "$WORK/server.log")
    fp=$(server_fingerprint "$WORK/server.log")
    local_port=$(free_port)
    grind "$WORK/client.log" "$WORK/tunnel-client" forward --server "127.0.0.1:$port" --pin-sha256 "$fp" --log-level notice \
        --control "$WORK/client.sock" -L "127.0.0.1:$local_port:127.0.0.1:$ECHO_PORT"
    wait_for "$WORK/client.log" "tunnel up"
    measure "$local_port" "$count"
    stop_all
    result "$WORK/server.log" "$WORK/client.log"
}

run_ssh() {
    local count=$1 ssh_port local_port
    [ -f "$WORK/ssh/host_key" ] || make_ssh_keys "$WORK/ssh"
    ssh_port=$(free_port)
    write_sshd_config "$WORK/ssh/sshd_config" "$ssh_port" 127.0.0.1 "$WORK/ssh"
    grind "$WORK/sshd.log" /usr/sbin/sshd -f "$WORK/ssh/sshd_config" -D -e
    wait_listen "$ssh_port" "$WORK/sshd.log"
    local_port=$(free_port)
    grind "$WORK/ssh.log" ssh -N -F /dev/null -i "$WORK/ssh/client_key" -o IdentitiesOnly=yes -o IdentityAgent=none \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR \
        -o ExitOnForwardFailure=yes -p "$ssh_port" -L "127.0.0.1:$local_port:127.0.0.1:$ECHO_PORT" "$(id -un)@127.0.0.1"
    wait_listen "$local_port" "$WORK/ssh.log"
    flows "$local_port" 5   # the session is up once a flow goes through
    measure "$local_port" "$count"
    stop_all
    result "$WORK/sshd.log" "$WORK/ssh.log"
}

run_relay() {
    local count=$1 local_port
    local_port=$(free_port)
    grind "$WORK/relay.log" "$WORK/RelayFloor" "$local_port:$ECHO_PORT"
    wait_listen "$local_port" "$WORK/relay.log"
    measure "$local_port" "$count"
    stop_all
    result "$WORK/relay.log"
}

printf '%-8s %18s\n' setup "CPU µs per flow"
for setup in $SETUPS; do
    printf '%-8s %18s\n' "$setup" "$(run_"$setup" "$CPU_FLOWS")"
done
echo "(on-CPU time, user and kernel, of the forwarding processes over $CPU_FLOWS flows after a warm-up)"
echo
MODE=instructions
printf '%-8s %14s %14s %16s\n' setup "$SHORT flows" "$LONG flows" "per flow"
for setup in $SETUPS; do
    [ "$setup" = ssh ] && continue
    a=$(run_"$setup" "$SHORT")
    # PROFILES=DIR keeps the SHORT run's files too (DIR/short), so that a function's count per flow is a difference.
    if [ -n "${PROFILES:-}" ]; then mkdir -p "$PROFILES/short" && cp "$WORK"/callgrind.* "$PROFILES/short/" 2>/dev/null || true; fi
    rm -f "$WORK"/callgrind.*
    b=$(run_"$setup" "$LONG")
    printf '%-8s %14d %14d %16d\n' "$setup" "$a" "$b" $(( (b - a) / (LONG - SHORT) ))
done
echo "(user-space instructions of the forwarding processes, callgrind; one flow: connect, 64 B each way, close)"
