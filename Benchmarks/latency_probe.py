#!/usr/bin/env python3
"""Helpers for Benchmarks/latency-under-load.sh (Python 3 standard library only).

  echo-server --host H --port P       TCP echo server (TCP_NODELAY), one thread per connection
  probe --host H --port P ...         one echo flow: 64-byte probes at a fixed interval,
                                      each answered within --timeout or counted as unanswered;
                                      prints one JSON object
  iperf --json F                      one `iperf3 -R -J` result -> {"mbit_per_s": ...}
  where --file F --port P --setup S   from an ss/tc snapshot taken mid-download: the sender
                                      socket's cwnd, rtt, unsent and in-flight bytes, the tbf backlog
  report --results F --json-out F ... the table and the ratios

The probe is open loop, like ping: a probe leaves every --interval seconds whatever
happened to the previous one, so a stalled flow keeps being asked and every probe it
does not answer in time is counted. Each probe carries its sequence number and the time
it left; the echo is matched by sequence number, so a late answer never passes for a
newer probe's.
"""

import argparse
import json
import math
import os
import re
import selectors
import socket
import struct
import sys
import threading
import time

PROBE_SIZE = 64
_HEADER = struct.Struct("!Qd")  # sequence number, send time (monotonic seconds)


# ---------------------------------------------------------------- echo server

def _echo_connection(conn):
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)
            except OSError:
                return


def echo_server(args):
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_echo_connection, args=(conn,), daemon=True).start()


# ---------------------------------------------------------------------- probe

def _percentile(sorted_values, fraction):
    """Nearest-rank percentile; inf stands for a probe that got no answer."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _ms(value):
    if value is None:
        return None
    return None if math.isinf(value) else round(value * 1000, 1)


def probe(args):
    """Probes before the measured window are warm-up, not counted. With --ready-file the
    probe says when its flow first answered; with --go-file it keeps warming up until that
    file appears and holds the window ("FROM UNTIL", wall-clock seconds), so a flow opened
    before the load is known to be open and answering when the load starts."""
    start = time.monotonic()
    result = {"connect_ms": None, "sent": 0, "answered": 0, "no_answer": 0, "late": 0,
              "warmup_answered": 0, "error": None}
    time.sleep(max(0.0, args.open_at - (time.monotonic() - start)))
    sent_at = {}       # sequence -> send time, counted probes still waiting
    rtts = []
    try:
        opened = time.monotonic()
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
        result["connect_ms"] = round((time.monotonic() - opened) * 1000, 1)
    except OSError as error:
        result["error"] = f"connect: {error}"
        sock = None
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        buffer = b""
        sequence = 0
        next_send = time.monotonic()
        def monotonic(epoch):
            return time.monotonic() + (epoch - time.time())
        measure_from, measure_until = monotonic(args.from_epoch), monotonic(args.until_epoch)
        if args.go_file:   # warm up until the window is known, but not forever
            measure_from = measure_until = time.monotonic() + args.go_timeout
        deadline = measure_until + args.timeout
        ready = False
        padding = b"p" * (PROBE_SIZE - _HEADER.size)
        closed = False
        while not closed:
            now = time.monotonic()
            if args.go_file and os.path.exists(args.go_file):
                with open(args.go_file) as f:
                    window = f.read().split()
                if len(window) == 2:
                    measure_from, measure_until = monotonic(float(window[0])), monotonic(float(window[1]))
                    deadline = measure_until + args.timeout
                    args.go_file = None
            if now >= deadline:
                if args.go_file:
                    result["error"] = result["error"] or "no measuring window came (--go-file)"
                break
            if now >= next_send and now < measure_until:
                message = _HEADER.pack(sequence, now) + padding
                try:
                    sock.send(message)  # 64 bytes into an empty-enough buffer; a short send counts as lost
                except (BlockingIOError, OSError) as error:
                    result["error"] = result["error"] or f"send: {error}"
                if now >= measure_from:
                    sent_at[sequence] = now
                    result["sent"] += 1
                sequence += 1
                next_send += args.interval
                if next_send < now:  # we fell behind (a loaded machine): skip, do not burst
                    next_send = now + args.interval
            wait = min(deadline, next_send if now < measure_until else deadline) - time.monotonic()
            for _key, _events in selector.select(timeout=max(0.0, wait)):
                try:
                    chunk = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError as error:
                    result["error"] = result["error"] or f"recv: {error}"
                    closed = True
                    break
                if not chunk:
                    result["error"] = result["error"] or "the flow was closed"
                    closed = True
                    break
                buffer += chunk
                arrived = time.monotonic()
                while len(buffer) >= PROBE_SIZE:
                    seq, _ = _HEADER.unpack_from(buffer)
                    buffer = buffer[PROBE_SIZE:]
                    sent = sent_at.pop(seq, None)
                    if args.ready_file and not ready:
                        ready = True
                        open(args.ready_file, "w").close()
                    if sent is None:
                        result["warmup_answered"] += 1 if seq < sequence else 0
                        continue
                    rtt = arrived - sent
                    if rtt > args.timeout:
                        result["late"] += 1
                        rtts.append(math.inf)
                    else:
                        rtts.append(rtt)
            if not sent_at and time.monotonic() >= measure_until:
                break
        sock.close()
    # Probes never answered (or answered after --timeout) count as no answer.
    rtts.extend([math.inf] * len(sent_at))
    result["answered"] = sum(1 for r in rtts if not math.isinf(r))
    result["no_answer"] = result["sent"] - result["answered"]
    everything = sorted(rtts)
    result["p50_ms"] = _ms(_percentile(everything, 0.50))
    result["p95_ms"] = _ms(_percentile(everything, 0.95))
    result["max_ms"] = _ms(everything[-1]) if everything else None
    result["p95_unanswered"] = bool(everything) and math.isinf(_percentile(everything, 0.95))
    answered = sorted(r for r in rtts if not math.isinf(r))
    result["max_answered_ms"] = _ms(answered[-1]) if answered else None
    result["timeout_ms"] = round(args.timeout * 1000)
    print(json.dumps(result))


# ---------------------------------------------------------------------- iperf

def iperf(args):
    try:
        with open(args.json) as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        print(json.dumps({"error": f"no iperf3 result: {error}"}))
        return
    if "error" in data:
        print(json.dumps({"error": data["error"]}))
        return
    try:
        bits = data["end"]["sum_received"]["bits_per_second"]
    except KeyError:
        print(json.dumps({"error": "no sum_received in the iperf3 result"}))
        return
    print(json.dumps({"mbit_per_s": round(bits / 1e6, 2)}))


# ---------------------------------------------------------------------- where

def _connections(lines):
    """(first line fields, details) pairs from `ss -Htin` output."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        if line[0].isspace() and out:
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        elif not line[0].isspace():
            out.append((line.split(), ""))
    return out


def _field(details, name):
    match = re.search(r"(?:^|\s)" + name + r":([0-9.]+)", details)
    return float(match.group(1)) if match else None


def _busiest(connections, port=None):
    best = None
    for fields, details in connections:
        # With a state filter ss leaves out the State column: find the addresses instead.
        addresses = [i for i, f in enumerate(fields) if re.fullmatch(r".+:\d+", f)]
        if len(addresses) < 2 or addresses[0] < 1:
            continue
        local, peer, send_q = fields[addresses[0]], fields[addresses[1]], fields[addresses[0] - 1]
        if port is not None and not local.endswith(f":{port}"):
            continue
        sent = _field(details, "bytes_sent") or 0
        if best is None or sent > best[0]:
            best = (sent, (local, peer, send_q), details)
    if best is None:
        return None
    _, (local, peer, send_q), details = best
    mss = _field(details, "mss") or 0
    unacked = _field(details, "unacked") or 0
    cc = re.search(r"(?:^|\s)([a-z0-9]+) wscale:", details)  # ss prints the algorithm just before wscale
    rtt = re.search(r"(?:^|\s)rtt:([0-9.]+)", details)
    return {"connection": f"{local} -> {peer}", "cc": cc.group(1) if cc else None, "send_q": int(send_q),
            "cwnd": _field(details, "cwnd"), "rtt_ms": float(rtt.group(1)) if rtt else None,
            "unacked_bytes": int(unacked * mss), "notsent_bytes": int(_field(details, "notsent") or 0)}


def where(args):
    """What sat between the sender and the wire at the snapshot: the sender socket's unsent
    and in-flight bytes, and the tbf backlog on the server's end."""
    sections = {}
    current = None
    with open(args.file) as f:
        for line in f:
            if line.startswith("## "):
                current = line[3:].strip()
                sections[current] = []
            elif current is not None:
                sections[current].append(line.rstrip("\n"))
    result = {}
    for title, lines in sections.items():
        if title.startswith("server side ss -tinm"):
            result["sender"] = _busiest(_connections(lines), args.port)
        elif title.startswith("server side ss -tin, TUN") and args.setup == "ip":
            result["inner_sender"] = _busiest(_connections(lines))
        elif title.startswith("server side qdisc"):
            # tc prints a size that is a near-exact multiple of 1024 as Kb or Mb.
            match = re.search(r"backlog (\d+)(b|Kb|Mb) (\d+)p", " ".join(lines))
            if match:
                unit = {"b": 1, "Kb": 1024, "Mb": 1024 * 1024}[match.group(2)]
                result["tbf_backlog_bytes"] = int(match.group(1)) * unit
    if args.status:
        # Our server's own queues in front of the link (`tunnel-server status --json`),
        # from the tunnel that has sent the most: the one carrying the download.
        try:
            with open(args.status) as f:
                tunnels = json.load(f).get("tunnels", [])
            busiest = max(tunnels, key=lambda t: t.get("bytesToClient", 0), default=None)
            if busiest and busiest.get("linkQueue"):
                result["program"] = busiest["linkQueue"]
        except (OSError, ValueError) as error:
            print(f"where: no status from {args.status}: {error}", file=sys.stderr)
    print(json.dumps(result))


# --------------------------------------------------------------------- report

SETUPS = [("direct", "direct TCP"), ("ours", "ours (forward -L)"), ("ssh", "ssh -L"), ("ip", "ours (IP tunnel)")]
SCENARIOS = [("idle", "idle"), ("before", "download, flow opened before"),
             ("during", "download, flow opened during")]


def _fmt_ms(value, unanswered, timeout_ms):
    if unanswered:
        return f">{timeout_ms}"
    return "-" if value is None else f"{value:.1f}"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 2)


def report(args):
    rows = {}
    with open(args.results) as f:
        for line in f:
            if line.strip():
                entry = json.loads(line)
                rows[(entry["setup"], entry["scenario"])] = entry
    out = sys.stdout
    print(f"\nEcho round trips ({PROBE_SIZE} B every {args.interval_ms} ms, answer within {args.timeout_ms} ms) "
          f"and iperf3 -R throughput; link {args.rate} each way (tbf), congestion control {args.cc}", file=out)
    print("p50/p95/max over every probe sent; a probe with no answer in time counts as infinitely late "
          f"(shown as >{args.timeout_ms})", file=out)
    header = f"{'setup':20} {'scenario':30} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'no answer':>10} {'Mbit/s':>8}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for setup, setup_label in SETUPS:
        for scenario, scenario_label in SCENARIOS:
            entry = rows.get((setup, scenario))
            if entry is None:
                continue
            p = entry.get("probe", {})
            if p.get("error") and not p.get("sent"):
                print(f"{setup_label:20} {scenario_label:30} failed: {p['error']}", file=out)
                continue
            t = entry.get("throughput") or {}
            tp = t.get("mbit_per_s")
            tp_text = "-" if scenario == "idle" else (f"{tp:.1f}" if tp is not None else "failed")
            no_answer = f"{p.get('no_answer', 0)}/{p.get('sent', 0)}"
            timeout_ms = p.get("timeout_ms", args.timeout_ms)
            p95_inf = p.get("p95_unanswered")
            max_inf = p.get("no_answer", 0) > 0
            p50_inf = p.get("p50_ms") is None and p.get("sent", 0) > 0
            print(f"{setup_label:20} {scenario_label:30} {_fmt_ms(p.get('p50_ms'), p50_inf, timeout_ms):>8} "
                  f"{_fmt_ms(p.get('p95_ms'), p95_inf, timeout_ms):>8} {_fmt_ms(p.get('max_ms'), max_inf, timeout_ms):>8} "
                  f"{no_answer:>10} {tp_text:>8}", file=out)
            if p.get("error"):
                print(f"{'':20}   note: {p['error']}", file=out)
    print("\nMid-download snapshot of the download's sender socket on the server side "
          "(for ours and ip: the tunnel's TLS connection) and of the server end's tbf queue:", file=out)
    for setup, setup_label in SETUPS:
        entry = rows.get((setup, "before"))
        w = (entry or {}).get("where") or {}
        for key, label in (("sender", "sender"), ("inner_sender", "inner TCP")):
            c = w.get(key)
            if not c:
                continue
            print(f"  {setup_label:20} {label:9} {c['cc'] or '?':5} cwnd {c['cwnd'] or 0:>5.0f}  rtt {c['rtt_ms'] or 0:>6.1f} ms  "
                  f"in flight {c['unacked_bytes'] // 1024:>5} KiB  unsent {c['notsent_bytes'] // 1024:>5} KiB", file=out)
        q = w.get("program")
        if q:
            rate = q.get("rateBytesPerSecond")
            rate_text = f"{rate * 8 / 1e6:.1f} Mbit/s" if rate else "not read yet"
            unsent = q.get("unsentBytes")
            queues = q.get("flowQueueBytes")
            print(f"  {setup_label:20} program   flows' queues {'?' if queues is None else queues // 1024} KiB  "
                  f"turn {q['turnBytes'] // 1024} KiB  TLS {q['tlsPlaintextBytes'] // 1024} KiB  "
                  f"channel {q['channelBytes'] // 1024} KiB  unsent {'?' if unsent is None else unsent // 1024} KiB  "
                  f"in flight {q['inFlightBytes'] // 1024} KiB  (room {q['roomBytes'] // 1024} KiB for {rate_text})", file=out)
        if "tbf_backlog_bytes" in w:
            print(f"  {setup_label:20} tbf queue {w['tbf_backlog_bytes'] // 1024} KiB", file=out)
    ratios = {}
    lines = []
    for scenario, scenario_label in SCENARIOS[1:]:
        def p95(setup):
            entry = rows.get((setup, scenario), {})
            p = entry.get("probe", {})
            return None if p.get("p95_unanswered") else p.get("p95_ms")
        def tp(setup):
            return ((rows.get((setup, scenario)) or {}).get("throughput") or {}).get("mbit_per_s")
        r = {"ours_p95_over_ssh_p95": _ratio(p95("ours"), p95("ssh")),
             "ours_p95_over_direct_p95": _ratio(p95("ours"), p95("direct")),
             "ours_throughput_over_direct": _ratio(tp("ours"), tp("direct"))}
        ratios[scenario] = r
        # A latency beside a download that failed was not measured under load.
        failed = [setup for setup in ("ours", "ssh", "direct") if (setup, scenario) in rows and tp(setup) is None]
        for key, other in (("ours_p95_over_ssh_p95", "ssh"), ("ours_p95_over_direct_p95", "direct"),
                           ("ours_throughput_over_direct", "direct")):
            if "ours" in failed or other in failed:
                r[key] = None
        def text(value, other):
            if "ours" in failed or other in failed:
                return "n/a (download failed: " + ", ".join(s for s in ("ours", other) if s in failed) + ")"
            if value is not None:
                return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"
            entry = rows.get(("ours", scenario), {})
            return "stall" if entry.get("probe", {}).get("p95_unanswered") else "n/a"
        lines.append(f"ratios, {scenario_label}: ours p95 / ssh p95 = {text(r['ours_p95_over_ssh_p95'], 'ssh')}, "
                     f"ours p95 / direct p95 = {text(r['ours_p95_over_direct_p95'], 'direct')}, "
                     f"ours throughput / direct = {text(r['ours_throughput_over_direct'], 'direct')}")
    print("", file=out)
    for line in lines:
        print(line, file=out)
    document = {"benchmark": "latency-under-load", "rate": args.rate, "congestion_control": args.cc,
                "duration_seconds": args.duration, "interval_ms": args.interval_ms, "timeout_ms": args.timeout_ms,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "results": [rows[k] for k in sorted(rows)], "ratios": ratios}
    tmp = args.json_out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(document, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.json_out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("echo-server")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, required=True)
    p.set_defaults(func=echo_server)
    p = sub.add_parser("probe")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--interval", type=float, default=0.03, help="seconds between probes")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds an answer may take (and the connect)")
    p.add_argument("--open-at", type=float, default=0.0, help="seconds after start to connect")
    p.add_argument("--from-epoch", type=float, default=0.0, help="wall-clock time; earlier probes are warm-up")
    p.add_argument("--until-epoch", type=float, default=0.0, help="wall-clock time; no probe leaves later")
    p.add_argument("--ready-file", help="created when the flow first answers")
    p.add_argument("--go-file", help="warm up until this file holds the window: FROM UNTIL (wall-clock)")
    p.add_argument("--go-timeout", type=float, default=30.0, help="seconds to wait for --go-file")
    p.set_defaults(func=probe)
    p = sub.add_parser("iperf")
    p.add_argument("--json", required=True)
    p.set_defaults(func=iperf)
    p = sub.add_parser("where")
    p.add_argument("--file", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--setup", required=True)
    p.add_argument("--status", help="tunnel-server status --json taken at the same moment")
    p.set_defaults(func=where)
    p = sub.add_parser("report")
    for name in ("--results", "--json-out", "--rate", "--cc"):
        p.add_argument(name, required=True)
    for name in ("--duration", "--interval-ms", "--timeout-ms"):
        p.add_argument(name, type=int, required=True)
    p.set_defaults(func=report)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
