#!/usr/bin/env python3
"""Helper for Benchmarks/faults.sh (Python 3 standard library only).

  login --port P --login L --password W
      One login (TLS, authenticate offering retry-later); prints
      "RESULT SECONDS": the result code (0 accepted, 4 try again later,
      1 refused, -1 no answer) and how long the answer took.

  recover --port P --login L --password W --limit S
      Logs in every 100 ms until one is accepted; prints the seconds from
      the start until then (or "none" after S seconds).

  peak --port P --tunnels N --echo-port E --bytes B --concurrency C
      Opens N tunnels (no login), each with one TCP flow to the echo server
      it runs on 127.0.0.1:E, sends B bytes through it and reads them back;
      holds them all, prints "open" on a line of its own, waits for a line
      on stdin, then closes them all at once.

Connects to 127.0.0.1 only: the script runs it inside its own network
namespace. Each tunnel comes from its own loopback address (127.1.x.y), as
clients on their own machines would.
"""

import argparse
import plistlib
import resource
import socket
import ssl
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def frame(message):
    payload = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
    return struct.pack("<I", len(payload) + 4) + payload


class Reader:
    """Frames from one TLS socket, keeping what it read past the last one."""

    def __init__(self, tls):
        self.tls = tls
        self.buffer = b""

    def next(self):
        while len(self.buffer) < 4 or len(self.buffer) < struct.unpack("<I", self.buffer[:4])[0]:
            chunk = self.tls.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        length = struct.unpack("<I", self.buffer[:4])[0]
        message = plistlib.loads(self.buffer[4:length])
        self.buffer = self.buffer[length:]
        return message


def tls_connect(port, source="127.0.0.1", timeout=30):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    tls = context.wrap_socket(raw, server_hostname="localhost")
    tls.settimeout(timeout)
    return tls


def login_once(port, login, password):
    started = time.monotonic()
    try:
        with tls_connect(port) as tls:
            tls.sendall(frame({"identifier": 0, "command": 10, "login": login, "password": password, "retry-later": 1}))
            answer = Reader(tls).next()
            code = -1 if answer is None else answer.get("result-code", -1)
    except OSError:
        code = -1
    return code, time.monotonic() - started


def login(args):
    code, seconds = login_once(args.port, args.login, args.password)
    print("%d %.3f" % (code, seconds))


def recover(args):
    started = time.monotonic()
    while time.monotonic() - started < args.limit:
        code, _ = login_once(args.port, args.login, args.password)
        if code == 0:
            print("%.2f" % (time.monotonic() - started))
            return
        time.sleep(0.1)
    print("none")


def echo_server(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1024)

    def serve(connection):
        with connection:
            try:
                while True:
                    data = connection.recv(65536)
                    if not data:
                        return
                    connection.sendall(data)
            except OSError:
                return  # the server reset the flow as its tunnel closed

    def accept():
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def one_tunnel(port, index, echo_port, size):
    source = "127.1.%d.%d" % (index // 250, index % 250 + 1)
    tls = tls_connect(port, source, timeout=60)
    reader = Reader(tls)
    tls.sendall(frame({"identifier": 1, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": "127.0.0.1", "port": echo_port}))
    while True:
        answer = reader.next()
        if answer is None:
            raise OSError("closed before the flow opened")
        if answer.get("command") == 7:
            break
    if answer.get("result-code") != 0:
        raise OSError("flow refused: %r" % answer)
    # A piece at a time, each echoed before the next: never more in flight than the flow's window.
    payload = b"x" * 16384
    sent = received = 0
    while sent < size:
        tls.sendall(frame({"identifier": 1, "command": 1, "data": payload}))
        sent += len(payload)
        while received < sent:
            message = reader.next()
            if message is None:
                raise OSError("closed before the echo came back")
            if message.get("command") == 1:
                received += len(message.get("data", b""))
    return tls


def peak(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    echo_server(args.echo_port)
    with ThreadPoolExecutor(args.concurrency) as pool:
        futures = [pool.submit(one_tunnel, args.port, index, args.echo_port, args.bytes) for index in range(args.tunnels)]
        tunnels, failures = [], 0
        for future in futures:
            try:
                tunnels.append(future.result())
            except OSError as error:
                failures += 1
                if failures <= 3:
                    print("tunnel failed: %s" % error, file=sys.stderr)
    print("open %d failed %d" % (len(tunnels), failures), flush=True)
    sys.stdin.readline()
    for tls in tunnels:
        try:
            tls.close()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("login", "recover"):
        command = commands.add_parser(name)
        command.add_argument("--port", type=int, required=True)
        command.add_argument("--login", required=True)
        command.add_argument("--password", required=True)
        command.add_argument("--limit", type=float, default=60)
    command = commands.add_parser("peak")
    command.add_argument("--port", type=int, required=True)
    command.add_argument("--tunnels", type=int, default=2000)
    command.add_argument("--echo-port", type=int, default=7007)
    command.add_argument("--bytes", type=int, default=262144)
    command.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    {"login": login, "recover": recover, "peak": peak}[args.command](args)


if __name__ == "__main__":
    main()
