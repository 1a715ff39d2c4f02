#!/usr/bin/env python3
"""Helper for Benchmarks/admission-flood.sh (modes idle and logins) (Python 3 standard library only).

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
import threading
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


def frame(message):
    payload = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
    return struct.pack("<I", len(payload) + 4) + payload


def authenticate_frame(password):
    return frame({"identifier": 0, "command": 10, "login": "alice", "password": password})


def tls_connect(port, source, timeout):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection((SERVER, port), timeout=timeout, source_address=(source, 0))
    tls = context.wrap_socket(raw, server_hostname="localhost")
    tls.settimeout(timeout)
    return tls


def read_frame(tls):
    """The next message as a dictionary; None when the connection closed first."""
    buffer = b""
    while len(buffer) < 4 or len(buffer) < struct.unpack("<I", buffer[:4])[0]:
        chunk = tls.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    return plistlib.loads(buffer[4:struct.unpack("<I", buffer[:4])[0]])


def login_outcome(port, source, password):
    """(outcome, seconds): accepted, refused, closed or an error's text."""
    started = time.monotonic()
    try:
        with tls_connect(port, source, timeout=60) as tls:
            tls.sendall(authenticate_frame(password))
            answer = read_frame(tls)
    except Exception as error:  # noqa: BLE001 - every failure is a result here
        return (type(error).__name__, time.monotonic() - started)
    if answer is None:
        return ("closed", time.monotonic() - started)
    return ("accepted" if answer.get("result-code") == 0 else "refused", time.monotonic() - started)


def guesses(args):
    outcomes = {}
    lock = threading.Lock()

    def guess(index):
        outcome, _ = login_outcome(args.port, args.source, "guess %d" % index)
        with lock:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1

    quiet, quiet_seconds = login_outcome(args.port, CLIENT_SOURCE, "wonderland")
    threads = [threading.Thread(target=guess, args=(index,)) for index in range(args.count)]
    for thread in threads:
        thread.start()
    right, seconds = login_outcome(args.port, CLIENT_SOURCE, "wonderland")
    for thread in threads:
        thread.join()
    report(args, {
        "right_login_alone": quiet, "right_login_alone_ms": round(quiet_seconds * 1000, 1),
        "guesses": args.count, "guess_outcomes": outcomes, "right_login": right, "right_login_ms": round(seconds * 1000, 1),
    })


def hoard(args):
    held = []
    kept = 0
    data = frame({"identifier": 1, "command": 1, "data": b"x" * (120 * 1024)})
    for _ in range(args.count):
        tls = None
        try:
            tls = tls_connect(args.port, args.source, timeout=2)
            tls.sendall(authenticate_frame("guess") + data * args.messages)
            kept += 1
        except Exception:  # noqa: BLE001 - refused, closed or stalled: all the server's choice
            pass
        if tls is not None:
            held.append(tls)
    report(args, {"connections": args.count, "tls_established": len(held), "sent_everything": kept})
    time.sleep(args.hold)
    for tls in held:
        tls.close()


def report(args, result):
    with open(args.out, "w") as out:
        json.dump(result, out)
    print(json.dumps(result), flush=True)


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
    p = sub.add_parser("guesses")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default=FLOOD_SOURCE)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--out", required=True)
    p = sub.add_parser("hoard")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default=FLOOD_SOURCE)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--messages", type=int, default=64)
    p.add_argument("--hold", type=float, default=3)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    {"flood": flood, "guesses": guesses, "hoard": hoard}[args.command](args)


if __name__ == "__main__":
    main()
