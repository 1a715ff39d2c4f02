#!/usr/bin/env python3
"""Helpers for Benchmarks/app-layer.sh (Python 3.11 standard library only).

Loopback only: every socket here binds or connects to 127.0.0.1.

  echo-server --port-file F           echo server on 127.0.0.1, free port written to F
  flow-rate --port P --flows N [--concurrency C] [--max-seconds S]
                                      open, send 64 bytes, read the echo, close; N times
  idle-flows --port P --count N --server-tree PID... --client-tree PID...
                                      VmRSS of the process trees before and after
                                      holding N established idle flows
  iperf --json F                      one iperf3 -J result -> compact JSON
  ssh-cipher LOG                      the cipher from `ssh -v` output
  report --results F --json-out F ... the table, the ratios, the targets
All subcommands that measure print one JSON object on stdout.
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import threading
import time

HOST = "127.0.0.1"


# ---------------------------------------------------------------- echo server

class _Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        self.transport.write(data)

    def eof_received(self):
        return False  # close our side too


async def _echo_main(port_file):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Echo, HOST, 0, backlog=4096, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, port_file)
    async with server:
        await server.serve_forever()


def echo_server(args):
    try:
        asyncio.run(_echo_main(args.port_file))
    except KeyboardInterrupt:
        pass


# ------------------------------------------------------------ flows per second

PAYLOAD = b"x" * 64


def _round_trip(sock, payload):
    sock.sendall(payload)
    got = 0
    while got < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the echo arrived")
        got += len(chunk)


def _one_flow(port, timeout):
    s = socket.create_connection((HOST, port), timeout=timeout)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _round_trip(s, PAYLOAD)
    finally:
        s.close()


def flow_rate(args):
    lock = threading.Lock()
    state = {"next": 0, "done": 0, "errors": 0, "first_error": None}
    deadline = time.monotonic() + args.max_seconds

    def worker():
        while True:
            with lock:
                if state["next"] >= args.flows or time.monotonic() > deadline:
                    return
                if state["errors"] > max(10, args.flows // 10):
                    return
                state["next"] += 1
            try:
                _one_flow(args.port, args.timeout)
                with lock:
                    state["done"] += 1
            except Exception as error:  # noqa: BLE001 - counted and reported
                with lock:
                    state["errors"] += 1
                    if state["first_error"] is None:
                        state["first_error"] = repr(error)

    start = time.monotonic()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.max_seconds + args.timeout + 5)
    elapsed = time.monotonic() - start
    print(json.dumps({
        "flows": state["done"], "errors": state["errors"], "first_error": state["first_error"],
        "seconds": round(elapsed, 4), "concurrency": args.concurrency,
        "flows_per_second": round(state["done"] / elapsed, 1) if elapsed > 0 else 0,
    }))


# ------------------------------------------------------------------ idle flows

def _children():
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree(pids):
    kids = _children()
    seen, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(kids.get(pid, []))
    return seen


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss(pids):
    return sum(_rss_kib(p) for p in _tree(pids))


def idle_flows(args):
    # Warm up: a few complete flows, so that one-time allocations are not counted.
    for _ in range(args.warmup):
        try:
            _one_flow(args.port, args.timeout)
        except OSError:
            pass
    time.sleep(args.settle)
    server_before, client_before = _tree_rss(args.server_tree), _tree_rss(args.client_tree)
    socks, errors, first_error = [], 0, None
    start = time.monotonic()
    deadline = start + args.max_seconds
    for _ in range(args.count):
        if time.monotonic() > deadline:
            break
        try:
            s = socket.create_connection((HOST, args.port), timeout=args.timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _round_trip(s, b"idle-flow-hello\n")
            socks.append(s)
        except OSError as error:
            errors += 1
            if first_error is None:
                first_error = repr(error)
            if errors > 20:
                break
    opened = time.monotonic() - start
    time.sleep(args.settle)
    # Every flow still answers (none was dropped while idle)?
    alive = 0
    for s in socks:
        try:
            _round_trip(s, b"?")
            alive += 1
        except OSError:
            pass
    time.sleep(args.settle)
    server_after, client_after = _tree_rss(args.server_tree), _tree_rss(args.client_tree)
    for s in socks:
        s.close()
    n = len(socks)
    out = {
        "requested": args.count, "opened": n, "alive": alive, "errors": errors, "first_error": first_error,
        "open_seconds": round(opened, 3),
        "server_pids": _tree(args.server_tree), "client_pids": _tree(args.client_tree),
        "server_rss_before_kib": server_before, "server_rss_after_kib": server_after,
        "client_rss_before_kib": client_before, "client_rss_after_kib": client_after,
    }
    if n:
        out["server_kib_per_flow"] = round((server_after - server_before) / n, 2)
        out["client_kib_per_flow"] = round((client_after - client_before) / n, 2)
        out["total_kib_per_flow"] = round(out["server_kib_per_flow"] + out["client_kib_per_flow"], 2)
    print(json.dumps(out))


# ----------------------------------------------------------------------- iperf3

def iperf(args):
    try:
        with open(args.json) as f:
            text = f.read()
        data = json.loads(text)
    except (OSError, ValueError) as error:
        print(json.dumps({"error": f"no iperf3 JSON: {error!r}"}))
        return
    if "error" in data:
        print(json.dumps({"error": data["error"]}))
        return
    end = data.get("end", {})
    sent = end.get("sum_sent", {}).get("bits_per_second")
    received = end.get("sum_received", {}).get("bits_per_second")
    if received is None:
        print(json.dumps({"error": "iperf3 JSON without end.sum_received"}))
        return
    print(json.dumps({
        "sender_gbps": round(sent / 1e9, 3) if sent else None,
        "receiver_gbps": round(received / 1e9, 3),
        "retransmits": end.get("sum_sent", {}).get("retransmits"),
        "streams": len(data.get("start", {}).get("connected", [])),
    }))


def ssh_cipher(args):
    cipher = None
    try:
        with open(args.log, errors="replace") as f:
            for line in f:
                if "kex: server->client cipher:" in line:
                    cipher = line.split("cipher:", 1)[1].split()[0]
                    break
    except OSError:
        pass
    print(cipher or "unknown")


# ----------------------------------------------------------------------- report

SETUPS = [("direct", "direct"), ("ours", "ours (forward)"), ("ssh", "ssh -N -L"), ("stunnel", "stunnel pair"),
          ("relay", "bare NIO relay")]


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def report(args):
    rows = []
    with open(args.results) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))

    def values(setup, metric, key):
        return [r["result"].get(key) for r in rows
                if r["setup"] == setup and r["metric"] == metric and "error" not in r["result"]]

    def failures(setup, metric):
        return [r for r in rows if r["setup"] == setup and r["metric"] == metric
                and ("error" in r["result"] or r["result"].get("errors"))]

    def all_failed(setup, metric):
        runs = [r for r in rows if r["setup"] == setup and r["metric"] == metric]
        return bool(runs) and all("error" in r["result"] for r in runs)

    summary = {}
    for setup, _ in SETUPS:
        s = {
            "tp1_gbps": _median(values(setup, "tp1", "receiver_gbps")),
            "tp1_sender_gbps": _median(values(setup, "tp1", "sender_gbps")),
            "tp16_gbps": _median(values(setup, "tp16", "receiver_gbps")),
            "tp16_sender_gbps": _median(values(setup, "tp16", "sender_gbps")),
            "fps_seq": _median(values(setup, "fps1", "flows_per_second")),
            "fps_conc": _median(values(setup, "fpsC", "flows_per_second")),
            "rss_kib_per_flow": _median(values(setup, "idle", "total_kib_per_flow")),
            "rss_server_kib_per_flow": _median(values(setup, "idle", "server_kib_per_flow")),
            "rss_client_kib_per_flow": _median(values(setup, "idle", "client_kib_per_flow")),
            "runs": {m: [r["result"] for r in rows if r["setup"] == setup and r["metric"] == m]
                     for m in ("tp1", "tp16", "fps1", "fpsC", "idle")},
            "failures": sum(len(failures(setup, m)) for m in ("tp1", "tp16", "fps1", "fpsC", "idle")),
            "failed_runs": {m: [{"round": r["round"], "error": r["result"].get("error") or r["result"].get("first_error")}
                                for r in failures(setup, m)] for m in ("tp1", "tp16", "fps1", "fpsC", "idle")},
            "all_runs_failed": [m for m in ("tp1", "tp16", "fps1", "fpsC", "idle") if all_failed(setup, m)],
        }
        summary[setup] = s

    ours, ssh = summary["ours"], summary["ssh"]

    def ratio(a, b):
        return round(a / b, 2) if a is not None and b else None

    ratios = {
        "tp1_ours_over_ssh": ratio(ours["tp1_gbps"], ssh["tp1_gbps"]),
        "tp16_ours_over_ssh": ratio(ours["tp16_gbps"], ssh["tp16_gbps"]),
        "fps_seq_ours_over_ssh": ratio(ours["fps_seq"], ssh["fps_seq"]),
        "fps_conc_ours_over_ssh": ratio(ours["fps_conc"], ssh["fps_conc"]),
        "tp1_ours_over_stunnel": ratio(ours["tp1_gbps"], summary["stunnel"]["tp1_gbps"]),
        "tp1_ours_over_direct": ratio(ours["tp1_gbps"], summary["direct"]["tp1_gbps"]),
        # No forwarder opens flows faster than the direct path it adds to: these are the
        # highest "x ssh -L" any tunnel can reach with this generator and sink on this machine.
        "fps_seq_direct_over_ssh": ratio(summary["direct"]["fps_seq"], ssh["fps_seq"]),
        "fps_conc_direct_over_ssh": ratio(summary["direct"]["fps_conc"], ssh["fps_conc"]),
        # The smallest SwiftNIO forwarder (one process, no TLS, no tunnel): the most any
        # forwarder built on SwiftNIO reaches on this machine.
        "tp1_relay_over_ssh": ratio(summary["relay"]["tp1_gbps"], ssh["tp1_gbps"]),
        "fps_seq_relay_over_ssh": ratio(summary["relay"]["fps_seq"], ssh["fps_seq"]),
        "fps_conc_relay_over_ssh": ratio(summary["relay"]["fps_conc"], ssh["fps_conc"]),
    }

    def verdict(ok):
        return "n/a" if ok is None else ("PASS" if ok else "FAIL")

    r = ratios
    def verdict_or_error(metric, ok):
        return "FAIL" if metric in ours["all_runs_failed"] else verdict(ok)

    targets = [
        ("single-flow throughput >= 1.5x ssh -L", r["tp1_ours_over_ssh"], ">= 1.5",
         verdict_or_error("tp1", None if r["tp1_ours_over_ssh"] is None else r["tp1_ours_over_ssh"] >= 1.5)),
        ("flows per second >= 2x ssh -L (sequential)", r["fps_seq_ours_over_ssh"], ">= 2",
         verdict_or_error("fps1", None if r["fps_seq_ours_over_ssh"] is None else r["fps_seq_ours_over_ssh"] >= 2)),
        ("flows per second >= 2x ssh -L (concurrency %d)" % args.concurrency, r["fps_conc_ours_over_ssh"], ">= 2",
         verdict_or_error("fpsC", None if r["fps_conc_ours_over_ssh"] is None else r["fps_conc_ours_over_ssh"] >= 2)),
        ("RSS per idle flow <= 16 KiB (server + client)", ours["rss_kib_per_flow"], "<= 16",
         verdict_or_error("idle", None if ours["rss_kib_per_flow"] is None else ours["rss_kib_per_flow"] <= 16)),
    ]

    out = sys.stdout
    print("", file=out)
    print(f"App-layer benchmark, loopback only, {args.runs} round(s), medians. iperf3 {args.duration:g} s per test; "
          f"flows/s: {args.flows} flows or {args.flow_seconds:g} s per test; {args.idle} idle flows.", file=out)
    print("NOTE: 2-core machine shared by client, server, load generator and sink (and possibly other "
          "people's builds): figures are noisy, compare ratios within this run only.", file=out)
    print(f"ssh cipher: {args.ssh_cipher}; stunnel: {args.stunnel_tls}; ours: {args.ours_tls}", file=out)
    print("", file=out)
    header = ("setup", "1-flow Gbit/s", "16-flow Gbit/s", "flows/s seq", f"flows/s x{args.concurrency}",
              "KiB/idle flow", "(server+client)")
    widths = (16, 13, 14, 11, 11, 13, 18)
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line, file=out)
    print("-" * len(line), file=out)
    for setup, label in SETUPS:
        s = summary[setup]
        split = ("-" if s["rss_server_kib_per_flow"] is None
                 else f"{s['rss_server_kib_per_flow']:.1f}+{s['rss_client_kib_per_flow']:.1f}")
        def cell(metric, value, digits):
            if metric in s["all_runs_failed"]:
                return "ERROR"
            text = _fmt(value, digits)
            return text + "*" if s["failed_runs"][metric] else text

        cells = (label, cell("tp1", s["tp1_gbps"], 2), cell("tp16", s["tp16_gbps"], 2), cell("fps1", s["fps_seq"], 0),
                 cell("fpsC", s["fps_conc"], 0), cell("idle", s["rss_kib_per_flow"], 1), split)
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))), file=out)
    print("", file=out)
    print("Throughput is iperf3's receiver figure; sender figures are in the JSON. KiB/idle flow is VmRSS growth "
          "of the forwarding processes / flows held.", file=out)
    generator = "native C" if args.flow_generator == "c" else "Python"
    print(f"flows/s: connect, 64-byte round trip, close ({generator} load generator, Python echo sink; they cap the direct row).",
          file=out)
    # The legend only when a cell needs it: read on its own, it looked like a failed run.
    if any(summary[setup]["all_runs_failed"] or any(summary[setup]["failed_runs"].values()) for setup, _ in SETUPS):
        print("ERROR: every run failed; *: median of the runs that succeeded (errors below).", file=out)
    print("", file=out)
    def x(value):
        return "-" if value is None else f"{value:.2f}x"

    print("Ratios ours / ssh -L:", file=out)
    print(f"  1-flow {x(r['tp1_ours_over_ssh'])}, 16-flow {x(r['tp16_ours_over_ssh'])}, "
          f"flows/s seq {x(r['fps_seq_ours_over_ssh'])}, flows/s x{args.concurrency} {x(r['fps_conc_ours_over_ssh'])}", file=out)
    print(f"  (ours / stunnel 1-flow {x(r['tp1_ours_over_stunnel'])}, ours / direct 1-flow {x(r['tp1_ours_over_direct'])})",
          file=out)
    print(f"Ceiling for any forwarder, direct / ssh -L: flows/s seq {x(r['fps_seq_direct_over_ssh'])}, "
          f"flows/s x{args.concurrency} {x(r['fps_conc_direct_over_ssh'])} (no tunnel opens flows faster than no tunnel)",
          file=out)
    print(f"Ceiling for a SwiftNIO forwarder, bare NIO relay / ssh -L: 1-flow {x(r['tp1_relay_over_ssh'])}, "
          f"flows/s seq {x(r['fps_seq_relay_over_ssh'])}, flows/s x{args.concurrency} {x(r['fps_conc_relay_over_ssh'])} "
          "(one process that only accepts, connects and copies: no TLS, no tunnel)", file=out)
    print("", file=out)
    print("Targets:", file=out)
    for name, value, target, result in targets:
        shown = "every run of ours failed" if value is None and result == "FAIL" else _fmt(value)
        print(f"  {result:4}  {name}: {shown} (target {target})", file=out)
    bad = [(setup, metric, failed) for setup, _ in SETUPS
           for metric, failed in summary[setup]["failed_runs"].items() if failed]
    if bad:
        print("", file=out)
        print("Runs with errors:", file=out)
        for setup, metric, failed in bad:
            reasons = sorted({str(f["error"]) for f in failed})
            print(f"  {setup} {metric}: {len(failed)} of {args.runs} run(s): {'; '.join(reasons)}", file=out)

    document = {
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "note": "2-core machine shared by client, server, load generator and sink"},
        "parameters": {"runs": args.runs, "duration_seconds": args.duration, "flows": args.flows,
                       "flow_seconds": args.flow_seconds,
                       "concurrency": args.concurrency, "idle_flows": args.idle},
        "ssh_cipher": args.ssh_cipher, "stunnel_tls": args.stunnel_tls, "ours_tls": args.ours_tls, "flow_generator": args.flow_generator,
        "medians": {k: {kk: vv for kk, vv in v.items() if kk != "runs"} for k, v in summary.items()},
        "ratios": ratios,
        "targets": [{"name": n, "value": v, "target": t, "result": res} for n, v, t, res in targets],
        "runs": {k: v["runs"] for k, v in summary.items()},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
    with open(args.json_out, "w") as f:
        json.dump(document, f, indent=2)
        f.write("\n")
    print("", file=out)
    print(f"JSON: {args.json_out}", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("echo-server")
    p.add_argument("--port-file", required=True)
    p.set_defaults(func=echo_server)

    p = sub.add_parser("flow-rate")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--flows", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-seconds", type=float, default=30)
    p.add_argument("--timeout", type=float, default=10)
    p.set_defaults(func=flow_rate)

    p = sub.add_parser("idle-flows")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--server-tree", type=int, nargs="+", required=True)
    p.add_argument("--client-tree", type=int, nargs="+", required=True)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--settle", type=float, default=1.0)
    p.add_argument("--max-seconds", type=float, default=60)
    p.add_argument("--timeout", type=float, default=10)
    p.set_defaults(func=idle_flows)

    p = sub.add_parser("iperf")
    p.add_argument("--json", required=True)
    p.set_defaults(func=iperf)

    p = sub.add_parser("ssh-cipher")
    p.add_argument("log")
    p.set_defaults(func=ssh_cipher)

    p = sub.add_parser("report")
    p.add_argument("--results", required=True)
    p.add_argument("--json-out", required=True)
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--flows", type=int, required=True)
    p.add_argument("--flow-seconds", type=float, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--idle", type=int, required=True)
    p.add_argument("--ssh-cipher", default="unknown")
    p.add_argument("--stunnel-tls", default="unknown")
    p.add_argument("--ours-tls", default="unknown")
    p.add_argument("--flow-generator", choices=["python", "c"], default="python")
    p.set_defaults(func=report)

    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
