# What flow-instructions.sh and flow-syscalls.sh share: sourced after WORK is made and
# flow_rate.c is built into $WORK/flow-rate; defines functions only.

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_for() {  # wait_for FILE TEXT: until FILE says TEXT (valgrind starts slowly)
    for _ in $(seq 1200); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.1; done
    echo "no \"$2\" in $1:" >&2; tail -20 "$1" >&2; exit 1
}

wait_listen() {  # wait_listen PORT LOG
    for _ in $(seq 1200); do ss -Hltn "sport = :$1" | grep -q . && return; sleep 0.1; done
    echo "nothing listens on $1:" >&2; tail -20 "$2" >&2; exit 1
}

flows() {  # flows PORT COUNT: one at a time; fails on any flow's error
    "$WORK/flow-rate" "$1" "$2" 1 600 >"$WORK/flows.json"
    python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r.get("errors", 0) == 0 else "flow errors: %s" % r)' "$WORK/flows.json"
}

start_echo_server() {  # the flows' loopback destination: its port in ECHO_PORT, its pid in ECHO_PID
    python3 Benchmarks/app_layer_helper.py echo-server --port-file "$WORK/echo.port" >/dev/null 2>&1 &
    ECHO_PID=$!
    for _ in $(seq 100); do [ -s "$WORK/echo.port" ] && break; sleep 0.1; done
    ECHO_PORT=$(cat "$WORK/echo.port")
}
