#!/usr/bin/env bash
# Prints the system calls one forwarded flow costs each side (release build), ours
# beside ssh -L: counts do not depend on how busy the shared machine is, so they show
# what timings cannot (an extra write, wakeup or socket option per flow).
# A flow is what app-layer.sh's flows/s counts: connect to the forwarded port, send
# 64 bytes, read the echo, close (Benchmarks/flow_rate.c, one at a time).
#   ours    client: tunnel-client forward    server: tunnel-server
#   ssh     client: ssh -N -L                server: sshd and the session processes it forked
# strace -c -f is attached to each side's processes for FLOWS flows, then for as long
# again with no flows (the idle timers); the table shows (flows - idle) / FLOWS per
# system call. epoll_wait counts wakeups of an event loop, futex and eventfd writes
# (write on an eventfd shows as write) hops between threads. The last rows are the
# context switches and the CPU time (user, kernel) of each side per flow, from
# CPU_FLOWS flows without strace (clock ticks: 2000 flows or more for a steady figure).
# Needs strace, cc, sshd and ssh; run as root (sshd). Takes under a minute.
#   sudo Benchmarks/flow-syscalls.sh
#   FLOWS=500 CPU_FLOWS=5000 SETUPS=ours SKIP_BUILD=1 sudo -E Benchmarks/flow-syscalls.sh
#   OURS_BIN=DIR ...   run tunnel-server and tunnel-client from DIR (a saved build, to compare
#                      before and after back to back); implies SKIP_BUILD=1
#   RAW=DIR ...        keep every strace summary in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
FLOWS=${FLOWS:-200}
CPU_FLOWS=${CPU_FLOWS:-2000}
SETUPS=${SETUPS:-ours ssh}
OURS_BIN=${OURS_BIN:-}
source Benchmarks/bench-files.sh

for program in strace cc python3; do
    command -v "$program" >/dev/null || { echo "needs $program" >&2; exit 2; }
done
if [ -z "${SKIP_BUILD:-}" ] && [ -z "$OURS_BIN" ]; then
    swift build -c release --product tunnel-server | grep -E "error|warning: unre" || true
    swift build -c release --product tunnel-client | grep -E "error|warning: unre" || true
fi
OURS_BIN=${OURS_BIN:-$(swift build -c release --show-bin-path)}
WORK=$(mktemp -d /tmp/flow-syscalls.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "${RAW:-}" ]; then mkdir -p "$RAW" && cp "$WORK"/*.strace "$RAW"/ 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
cc -O2 -pthread -o "$WORK/flow-rate" Benchmarks/flow_rate.c
source Benchmarks/flow-bench.sh
start() {  # start LOG PROGRAM ARGS...: in the background, pid in LAST_PID
    local log=$1; shift
    "$@" >"$log" 2>&1 &
    LAST_PID=$!; PIDS+=("$LAST_PID")
}
tree() {  # the process and its descendants
    local child
    echo "$1"
    for child in $(pgrep -P "$1" 2>/dev/null || true); do tree "$child"; done
}
traced() {  # traced NAME PHASE ROOT: strace -c -f attached to the tree of ROOT, pid in TRACER
    local args=() pid
    for pid in $(tree "$3"); do args+=(-p "$pid"); done
    strace -c -f -o "$WORK/$1-$2.strace" "${args[@]}" 2>/dev/null &
    TRACERS+=($!)
}
usage() {  # "SWITCHES USER KERNEL" so far, of every thread of the tree of ROOT: context switches
    # (voluntary and not) and clock ticks in user space and in the kernel
    local pid task
    for pid in $(tree "$1"); do
        for task in /proc/"$pid"/task/*; do
            awk '/ctxt_switches/ { n += $2 } END { printf "%d ", n }' "$task/status" 2>/dev/null || continue
            sed 's/^.*) //' "$task/stat" 2>/dev/null | awk '{ print $12, $13 }' || echo "0 0"
        done
    done | awk '{ s += $1; u += $2; k += $3 } END { print s + 0, u + 0, k + 0 }'
}
# count SETUP PORT CLIENT_ROOT SERVER_ROOT: CPU_FLOWS flows untraced (context switches, CPU
# time), then FLOWS flows traced, then as long idle traced
count() {
    local phase started elapsed tracer client server
    client=$(usage "$3"); server=$(usage "$4")
    flows "$2" "$CPU_FLOWS"
    echo "$client $(usage "$3")" >"$WORK/$1-client.usage"
    echo "$server $(usage "$4")" >"$WORK/$1-server.usage"
    for phase in flows idle; do
        TRACERS=()
        traced "$1-client" "$phase" "$3"
        traced "$1-server" "$phase" "$4"
        sleep 1   # strace attaches
        started=$(date +%s.%N)
        if [ "$phase" = flows ]; then
            flows "$2" "$FLOWS"
            elapsed=$(python3 -c "import sys; print(max(float(sys.argv[1]) - float(sys.argv[2]), 0.1))" "$(date +%s.%N)" "$started")
        else
            sleep "$elapsed"
        fi
        sleep 0.2   # the last close reaches every process
        for tracer in "${TRACERS[@]}"; do kill -INT "$tracer" 2>/dev/null || true; done
        for tracer in "${TRACERS[@]}"; do wait "$tracer" 2>/dev/null || true; done
    done
}

start_echo_server
PIDS+=("$ECHO_PID")

run_ours() {
    local port fp local_port server client
    start "$WORK/server.log" "$OURS_BIN/tunnel-server" --port 0 --no-ip-layer --state-directory "$WORK/state" --log-level notice
    server=$LAST_PID
    wait_for "$WORK/server.log" "listening on"
    wait_for "$WORK/server.log" "SHA-256"
    port=$(server_port "$WORK/server.log")
    fp=$(server_fingerprint "$WORK/server.log")
    local_port=$(free_port)
    start "$WORK/client.log" "$OURS_BIN/tunnel-client" forward --server "127.0.0.1:$port" --pin-sha256 "$fp" --log-level notice \
        -L "127.0.0.1:$local_port:127.0.0.1:$ECHO_PORT"
    client=$LAST_PID
    wait_for "$WORK/client.log" "tunnel up"
    flows "$local_port" 20   # warm-up
    count ours "$local_port" "$client" "$server"
}

run_ssh() {
    local ssh_port local_port sshd client
    make_ssh_keys "$WORK/ssh"
    ssh_port=$(free_port)
    write_sshd_config "$WORK/ssh/sshd_config" "$ssh_port" 127.0.0.1 "$WORK/ssh"
    start "$WORK/sshd.log" /usr/sbin/sshd -f "$WORK/ssh/sshd_config" -D -e
    sshd=$LAST_PID
    wait_listen "$ssh_port" "$WORK/sshd.log"
    local_port=$(free_port)
    start "$WORK/ssh.log" ssh -N -F /dev/null -i "$WORK/ssh/client_key" -o IdentitiesOnly=yes -o IdentityAgent=none \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR \
        -o ExitOnForwardFailure=yes -p "$ssh_port" -L "127.0.0.1:$local_port:127.0.0.1:$ECHO_PORT" "$(id -un)@127.0.0.1"
    client=$LAST_PID
    wait_listen "$local_port" "$WORK/ssh.log"
    flows "$local_port" 20   # the session is up once a flow goes through; warm-up
    count ssh "$local_port" "$client" "$sshd"
}

for setup in $SETUPS; do run_"$setup"; done

# The table: per flow, (flows - idle) / FLOWS, for every system call any side made per flow.
python3 - "$WORK" "$FLOWS" "$CPU_FLOWS" $SETUPS <<'PY'
import collections, os, sys
work, flows, cpu_flows, setups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def calls(path):
    counts = collections.Counter()
    for line in open(path):
        parts = line.split()
        if len(parts) >= 5 and parts[3].isdigit() and parts[-1] not in ("total",):
            counts[parts[-1]] += int(parts[3])
    return counts
columns, per_flow = [], {}
for setup in setups:
    for side in ("client", "server"):
        name = f"{setup}-{side}"
        busy, idle = calls(f"{work}/{name}-flows.strace"), calls(f"{work}/{name}-idle.strace")
        columns.append(name)
        per_flow[name] = {call: (busy[call] - idle[call]) / flows for call in busy | idle}
names = sorted({c for col in per_flow.values() for c, n in col.items() if abs(n) >= 0.05},
               key=lambda c: -sum(col.get(c, 0) for col in per_flow.values()))
print(f"{'per flow':<18}" + "".join(f"{c:>13}" for c in columns))
for call in names:
    print(f"{call:<18}" + "".join(f"{per_flow[c].get(call, 0):>13.2f}" for c in columns))
print(f"{'total':<18}" + "".join(f"{sum(per_flow[c].values()):>13.2f}" for c in columns))
tick = 1e6 / os.sysconf("SC_CLK_TCK")
for row, index, scale in (("ctx switches", 0, 1), ("user µs", 1, tick), ("kernel µs", 2, tick)):
    values = []
    for c in columns:
        numbers = [int(n) for n in open(f"{work}/{c}.usage").read().split()]
        values.append((numbers[3 + index] - numbers[index]) * scale / cpu_flows)
    print(f"{row:<18}" + "".join(f"{v:>13.2f}" for v in values))
print(f"(system calls: {flows} flows one at a time, less as long again idle, strace -c -f on each side's processes;")
print(f" the last three rows: {cpu_flows} flows untraced, every thread, idle not taken off)")
PY
