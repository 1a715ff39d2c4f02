#!/usr/bin/env python3
"""Helper for Benchmarks/admission-flood.sh (Python 3 standard library only).

Loopback only: the flood binds 127.0.0.2, the legitimate client 127.0.0.1,
and both connect to the server on 127.0.0.1.

  flood --port P --count N --seconds S --out F
      Hold N idle TCP connections from 127.0.0.2 for S seconds, reopening
      each one the server closes (a reconnect loop). Meanwhile, once a second,
      a legitimate client from 127.0.0.1 connects, finishes TLS and waits for
      the answer to fetchConfiguration; prints one JSON object with the
      legitimate clients' times and failures and how many reconnects the
      flood made.
"""

import argparse
import json
import plistlib
import selectors
import socket
import ssl
import statistics
import struct
import time

SERVER = "127.0.0.1"
FLOOD_SOURCE = "127.0.0.2"
CLIENT_SOURCE = "127.0.0.1"


def fetch_configuration_frame():
    payload = plistlib.dumps({"identifier": 0, "command": 9}, fmt=plistlib.FMT_BINARY)
    return struct.pack("<I", len(payload) + 4) + payload


def legitimate_client(port, timeout):
    """Seconds from connect to the answer to fetchConfiguration; raises on failure."""
    started = time.monotonic()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection((SERVER, port), timeout=timeout, source_address=(CLIENT_SOURCE, 0))
    with context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.settimeout(timeout)
        tls.sendall(fetch_configuration_frame())
        header = b""
        while len(header) < 4:
            chunk = tls.recv(4 - len(header))
            if not chunk:
                raise ConnectionError("closed before the answer")
            header += chunk
    return time.monotonic() - started


def open_idle(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.bind((FLOOD_SOURCE, 0))
    try:
        sock.connect((SERVER, port))
    except BlockingIOError:
        pass
    return sock


def flood(args):
    selector = selectors.DefaultSelector()
    for _ in range(args.count):
        selector.register(open_idle(args.port), selectors.EVENT_READ)
    reconnects = 0
    times, failures = [], []
    end = time.monotonic() + args.seconds
    next_client = time.monotonic() + 1.0
    while time.monotonic() < end:
        for key, _ in selector.select(timeout=0.05):
            sock = key.fileobj
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                # The server closed it: reconnect at once, as a hostile loop does.
                selector.unregister(sock)
                sock.close()
                selector.register(open_idle(args.port), selectors.EVENT_READ)
                reconnects += 1
        if time.monotonic() >= next_client:
            next_client = time.monotonic() + 1.0
            try:
                times.append(legitimate_client(args.port, timeout=5.0))
            except Exception as error:  # noqa: BLE001 - every failure is a result here
                failures.append(str(error))
    result = {
        "flood_sockets": args.count,
        "flood_reconnects": reconnects,
        "legitimate_ok": len(times),
        "legitimate_failed": len(failures),
        "legitimate_median_ms": round(statistics.median(times) * 1000, 1) if times else None,
        "legitimate_max_ms": round(max(times) * 1000, 1) if times else None,
        "failures": failures[:5],
    }
    with open(args.out, "w") as out:
        json.dump(result, out)
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("flood")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    flood(args)


if __name__ == "__main__":
    main()
