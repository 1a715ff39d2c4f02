#!/usr/bin/env bash
# Bulk single-stream TLS throughput over loopback, same run, same cipher
# (TLS 1.3, TLS_AES_128_GCM_SHA256), same key type (EC P-256):
#   stunnel: plain source -> stunnel client -> TLS -> stunnel server -> plain sink
#   relay:   the same topology with our TLSHandler in two relays (one thread each)
#   direct:  our TLS client handler -> our TLS server handler, source and sink in-process
# The headline ratio is relay/stunnel (like for like).
#
#   Benchmarks/tls-throughput.sh [BYTES_PER_RUN] [RUNS]     (defaults: 1 GiB, 3 runs)
#
# Needs: swift, openssl, stunnel4 (or stunnel), python3 (to find free ports).
# Prints every run, the median of each side in MB/s (10^6 bytes/s) and Gbit/s,
# and the ratio ours/stunnel. Loopback only.
set -euo pipefail

BYTES=${1:-1073741824}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

STUNNEL=$(command -v stunnel4 || command -v stunnel || true)
if [ -z "$STUNNEL" ]; then
    echo "stunnel not found: apt-get install -y stunnel4" >&2
    exit 1
fi

swift build -c release --product TLSBenchmark >&2
BENCH="$(swift build -c release --show-bin-path)/TLSBenchmark"

WORK=$(mktemp -d)
STUNNEL_PIDS=()
cleanup() {
    for pid in "${STUNNEL_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -subj /CN=localhost -days 1 2>/dev/null

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
TLS_PORT=$(free_port)
CLIENT_PORT=$(free_port)
SINK_PORT=$(free_port)

cat > "$WORK/server.conf" <<CONF
foreground = yes
pid =
debug = 3
[bench]
accept = 127.0.0.1:$TLS_PORT
connect = 127.0.0.1:$SINK_PORT
cert = $WORK/cert.pem
key = $WORK/key.pem
sslVersionMin = TLSv1.3
ciphersuites = TLS_AES_128_GCM_SHA256
CONF
cat > "$WORK/client.conf" <<CONF
foreground = yes
pid =
debug = 3
[bench]
client = yes
accept = 127.0.0.1:$CLIENT_PORT
connect = 127.0.0.1:$TLS_PORT
sslVersionMin = TLSv1.3
ciphersuites = TLS_AES_128_GCM_SHA256
CONF
"$STUNNEL" "$WORK/server.conf" 2>"$WORK/server.log" & STUNNEL_PIDS+=($!)
"$STUNNEL" "$WORK/client.conf" 2>"$WORK/client.log" & STUNNEL_PIDS+=($!)
sleep 1
for pid in "${STUNNEL_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "stunnel failed to start:"; cat "$WORK"/*.log; exit 1; } >&2
done

rate() { "$@" | awk '/^MBPS/ { print $2 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

RELAY=()
DIRECT=()
THEIRS=()
for run in $(seq 1 "$RUNS"); do
    theirs=$(rate "$BENCH" plain --connect-port "$CLIENT_PORT" --sink-port "$SINK_PORT" --bytes "$BYTES")
    relay=$(rate "$BENCH" relay --cert "$WORK/cert.pem" --key "$WORK/key.pem" --bytes "$BYTES")
    direct=$(rate "$BENCH" ours --cert "$WORK/cert.pem" --key "$WORK/key.pem" --bytes "$BYTES")
    printf 'run %d: stunnel %.0f MB/s, ours relay %.0f MB/s, ours direct %.0f MB/s\n' \
        "$run" "$theirs" "$relay" "$direct"
    THEIRS+=("$theirs")
    RELAY+=("$relay")
    DIRECT+=("$direct")
done

THEIRS_MEDIAN=$(printf '%s\n' "${THEIRS[@]}" | median)
RELAY_MEDIAN=$(printf '%s\n' "${RELAY[@]}" | median)
DIRECT_MEDIAN=$(printf '%s\n' "${DIRECT[@]}" | median)
awk -v t="$THEIRS_MEDIAN" -v r="$RELAY_MEDIAN" -v d="$DIRECT_MEDIAN" -v b="$BYTES" -v n="$RUNS" 'BEGIN {
    printf "bytes per run: %s, runs: %s, medians:\n", b, n
    printf "  stunnel pair:                   %6.0f MB/s (%5.2f Gbit/s)\n", t, t * 8 / 1000
    printf "  ours, same topology (relay):    %6.0f MB/s (%5.2f Gbit/s)\n", r, r * 8 / 1000
    printf "  ours, handlers only (direct):   %6.0f MB/s (%5.2f Gbit/s)\n", d, d * 8 / 1000
    printf "ratio relay/stunnel:  %.2f (target >= 0.80)\n", r / t
    printf "ratio direct/stunnel: %.2f\n", d / t
}'
