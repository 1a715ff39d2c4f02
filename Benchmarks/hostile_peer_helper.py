#!/usr/bin/env python3
"""A hostile tunnel client against a running tunnel-server, and the server's
memory and descriptors while it misbehaves (Benchmarks/hostile-peer.sh).

Each scenario opens its own TLS tunnel on 127.0.0.1, misbehaves for a while,
and reports the server's resident memory (VmRSS) and open descriptors: before,
at their peak while it ran (sampled every 50 ms), and after. Destinations are
on loopback: a sink that accepts and never reads, and a source that sends as
fast as it can.

  ignore-suspend  8 flows to the sink, data sent nonstop whatever the server says
  open-flood      as many flows as the server takes, to the sink, no data
  never-read      64 flows to the source, and the tunnel is never read
  close-unread    400 flows to the sink, 1 MiB each, then closed at once
"""

import argparse
import json
import plistlib
import socket
import ssl
import struct
import threading
import time

SERVER = "127.0.0.1"


def frame(message):
    payload = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
    return struct.pack("<I", len(payload) + 4) + payload


def open_frame(identifier, port):
    return frame({"identifier": identifier, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1,
                  "host": "127.0.0.1", "port": port})


def data_frame(identifier, payload):
    return frame({"identifier": identifier, "command": 1, "data": payload})


def close_frame(identifier):
    return frame({"identifier": identifier, "command": 4, "close-type": 4})


def tunnel(port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection((SERVER, port), timeout=10)
    tls = context.wrap_socket(raw, server_hostname="localhost")
    tls.settimeout(10)
    return tls


def drain(tls):
    """Reads and discards whatever the server sent, without waiting."""
    tls.settimeout(0)
    try:
        while tls.recv(1 << 16):
            pass
    except (ssl.SSLWantReadError, BlockingIOError, socket.timeout):
        pass
    except (ConnectionError, ssl.SSLError, OSError):
        return False
    finally:
        tls.settimeout(10)
    return True


class Sampler:
    """The server's VmRSS (KiB) and open descriptors, every 50 ms."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_rss = 0
        self.peak_fds = 0
        self.running = False

    def rss(self):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self):
        import os
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def __enter__(self):
        self.before = (self.rss(), self.fds())
        self.peak_rss, self.peak_fds = self.before
        self.running = True
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()
        return self

    def loop(self):
        while self.running:
            try:
                self.peak_rss = max(self.peak_rss, self.rss())
                self.peak_fds = max(self.peak_fds, self.fds())
            except OSError:
                return
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()


def serve(kind):
    """A loopback destination: 'sink' never reads, 'source' sends without end."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    held = []

    def accept():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)
            if kind == "source":
                threading.Thread(target=blast, args=(connection,), daemon=True).start()

    def blast(connection):
        chunk = b"x" * (1 << 16)
        try:
            while True:
                connection.sendall(chunk)
        except OSError:
            pass

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def ignore_suspend(port, sink, seconds):
    tls = tunnel(port)
    flows = range(1, 9)
    for identifier in flows:
        tls.sendall(open_frame(identifier, sink))
    payload = b"y" * (60 * 1024)
    sent = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for identifier in flows:
                tls.sendall(data_frame(identifier, payload))
                sent += len(payload)
            if not drain(tls):
                break
    except (OSError, ssl.SSLError):
        pass
    tls.close()
    return {"sent_mib": round(sent / (1 << 20), 1)}


def open_flood(port, sink, seconds):
    tls = tunnel(port)
    identifier = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and identifier < 200_000:
            batch = b"".join(open_frame(identifier + n + 1, sink) for n in range(256))
            tls.sendall(batch)
            identifier += 256
            drain(tls)
    except (OSError, ssl.SSLError):
        pass
    time.sleep(1)
    tls.close()
    return {"opens_sent": identifier}


def never_read(port, source, seconds):
    tls = tunnel(port)
    for identifier in range(1, 65):
        tls.sendall(open_frame(identifier, source))
    time.sleep(seconds)
    tls.close()
    return {"flows": 64}


def close_unread(port, sink, seconds):
    tls = tunnel(port)
    payload = b"z" * (60 * 1024)
    flows = 0
    try:
        # Opened first: data past 256 KiB before an open completes closes the flow at once.
        for identifier in range(1, 401):
            tls.sendall(open_frame(identifier, sink))
        time.sleep(1)
        drain(tls)
        for identifier in range(1, 401):
            for _ in range(17):
                tls.sendall(data_frame(identifier, payload))
            tls.sendall(close_frame(identifier))
            flows += 1
            drain(tls)
    except (OSError, ssl.SSLError):
        pass
    time.sleep(seconds)
    tls.close()
    return {"flows_closed": flows}


SCENARIOS = {"ignore-suspend": ("sink", ignore_suspend), "open-flood": ("sink", open_flood),
             "never-read": ("source", never_read), "close-unread": ("sink", close_unread)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--settle", type=float, default=3)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    destinations = {"sink": serve("sink"), "source": serve("source")}
    results = []
    for name in args.scenarios:
        kind, run = SCENARIOS[name]
        with Sampler(args.pid) as sampler:
            detail = run(args.port, destinations[kind], args.seconds)
            time.sleep(args.settle)
        after = (sampler.rss(), sampler.fds())
        results.append({"scenario": name, "rss_kib_before": sampler.before[0], "rss_kib_peak": sampler.peak_rss,
                        "rss_kib_after": after[0], "fds_before": sampler.before[1], "fds_peak": sampler.peak_fds,
                        "fds_after": after[1], **detail})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
