#!/usr/bin/env bash
# Builds the libFuzzer targets (address sanitizer on) and runs each for
# SECONDS, seeded from Fixtures/ and Fuzz/Seeds/, keeping what it learns in
# Fuzz/Corpus/ (git-ignored). Fails on any crash, leak, timeout or
# out-of-memory; a failing input is left in Fuzz/Artifacts/<target>/.
# Prints executions and coverage (cov: edges, ft: features) per target.
# Usage: Fuzz/run.sh [SECONDS] [TARGET...]   (default: 60 s, every target)
# Environment: FUZZ_CONFIGURATION=debug|release (default release);
# FUZZ_BIN=DIR runs the harnesses already built in DIR instead of building;
# FUZZ_MINIMUM_EXECUTIONS=N fails a target that ran fewer inputs (default 200 a second).
# No single allocation may exceed 1 MiB (-malloc_limit_mb), and the frame
# harnesses check that decoding a frame holds at most 1 MiB in all with its
# bytes (FuzzDriver's HeapMeter): that is the most a frame may make the
# server hold.
set -euo pipefail
cd "$(dirname "$0")"
command -v swift >/dev/null 2>&1 || export PATH="/opt/swift/usr/bin:$PATH"

seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(FuzzFrameDecoder FuzzXMLPropertyList FuzzSOCKS5 FuzzAuthenticationGate FuzzNames FuzzTUNSplit FuzzSuperPacket FuzzPortLookup FuzzProxyHeader)
fi
configuration=${FUZZ_CONFIGURATION:-release}

# lld: gold stops with an internal error (reading the toolchain's DWARF 5) on these links.
# -enable-testing: a harness may build the library's internal pieces (`@testable import`), as the tests do.
build=(swift build -c "$configuration" -Xswiftc -enable-testing -Xswiftc -sanitize=fuzzer,address -Xswiftc -enforce-exclusivity=checked -Xswiftc -use-ld=lld)
if [ -n "${FUZZ_BIN:-}" ]; then
    bin=$FUZZ_BIN  # harnesses built already (a long campaign beside other work)
else
    "${build[@]}" 2>&1 | grep -E "error|warning: unre|Compiling|Build" | grep -v "^Compiling" || true
    "${build[@]}" >/dev/null  # fails here, loudly, if the build did
    bin=$("${build[@]}" --show-bin-path)
fi

# Seeds per target: frames for the tunnel's decoders (with the heaviest a
# frame can be, made anew each run), plists for the XML reader.
heavy=$(mktemp -d)
trap 'rm -rf "$heavy"' EXIT
python3 heavy_frames.py "$heavy"
seeds() {
    case "$1" in
        FuzzFrameDecoder|FuzzAuthenticationGate) echo ../Fixtures/valid ../Fixtures/invalid "$heavy" ;;
        FuzzXMLPropertyList) echo ../Fixtures/cf-source ../Examples ;;
        FuzzSOCKS5) echo Seeds/socks5 ;;
        FuzzNames) echo Seeds/names ;;
        FuzzTUNSplit) echo Seeds/tun-split ;;
        FuzzSuperPacket) echo Seeds/super-packet ;;
        FuzzPortLookup) echo Seeds/port-lookup ;;
        FuzzProxyHeader) echo Seeds/proxy-header ;;
        *) echo "unknown target $1" >&2; exit 2 ;;
    esac
}

# A frame is at most 128 KiB; the other inputs are small (a host or login: 512 bytes covers every limit twice).
maximum_length() {
    case "$1" in
        FuzzFrameDecoder|FuzzAuthenticationGate) echo 132000 ;;
        FuzzXMLPropertyList) echo 65536 ;;
        FuzzNames) echo 512 ;;
        FuzzTUNSplit) echo 65545 ;;  # a 64 KiB super-packet and its virtio_net_hdr
        FuzzSuperPacket) echo 65537 ;;  # a 64 KiB super-packet and its segment size
        FuzzPortLookup) echo 65535 ;;  # an IPv6 packet without a jumbo payload
        FuzzProxyHeader) echo 1024 ;;  # past the 536-byte cap, with the client's first bytes after it
        *) echo 4096 ;;
    esac
}

# The login gate answers from the checker's thread and a task, so an input's
# mallocs and frees never balance and libFuzzer would run a full leak check
# after every input (22 ms each); its leaks are checked once, at exit.
options() {
    case "$1" in
        FuzzAuthenticationGate) echo -detect_leaks=0 ;;
    esac
}

# Memory the leak checker cannot see is still referenced (Fuzz/lsan-suppressions.txt says why).
export LSAN_OPTIONS="suppressions=$PWD/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# The floor: 200 inputs a second (10,000 in CI's 50 s), a tenth of the slowest
# target's rate in CI (the login gate, about 2,000 a second; the others 4,000 to
# 20,000): a target that stalls, or spends its time on one slow input, fails.
minimum_executions=${FUZZ_MINIMUM_EXECUTIONS:-$((seconds * 200))}

status=0
for target in "${targets[@]}"; do
    corpus="Corpus/$target"
    artifacts="Artifacts/$target/"
    mkdir -p "$corpus" "$artifacts"
    log=$(mktemp)
    # shellcheck disable=SC2046
    if "$bin/$target" "$corpus" $(seeds "$target") \
        -max_total_time="$seconds" -max_len="$(maximum_length "$target")" \
        -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1 \
        -print_final_stats=1 -artifact_prefix="$artifacts" $(options "$target") >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
        grep -E "ERROR|SUMMARY|==[0-9]+==|Fatal error|Test unit written" "$log" | head -20 || true
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    # A target that stalls (a harness stuck on its seeds, a slow path) passes with no
    # crash but fuzzes nothing: fewer executions than the floor fail the run.
    if [ "$result" = ok ] && [ "${runs:-0}" -lt "$minimum_executions" ]; then
        result="FAILED (under $minimum_executions executions)"
        status=1
    fi
    coverage=$(grep -E "^#[0-9]+" "$log" | tail -1 | grep -oE "cov: [0-9]+ ft: [0-9]+" || true)
    printf '%-24s %-6s %12s executions  %s  corpus %s files\n' "$target" "$result" "${runs:-?}" "${coverage:-?}" "$(ls "$corpus" | wc -l)"
    if [ "$result" != ok ]; then cp "$log" "$artifacts/log.txt"; fi
    rm -f "$log"
done
exit $status
