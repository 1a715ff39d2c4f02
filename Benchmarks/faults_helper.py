#!/usr/bin/env python3
"""Helper for Benchmarks/faults.sh (Python 3 standard library only).

  login --port P --login L --password W
      One login (TLS, authenticate offering retry-later); prints
      "RESULT SECONDS": the result code (0 accepted, 4 try again later,
      1 refused, -1 no answer) and how long the answer took.

  recover --port P --login L --password W --limit S
      Logs in every 100 ms until one is accepted; prints the seconds from
      the start until then (or "none" after S seconds).

  peak --port P --tunnels N --echo-port E --bytes B --concurrency C [--close-file PATH]
      Opens N tunnels (no login), each with one TCP flow to the echo server
      it runs on 127.0.0.1:E, sends B bytes through it and reads them back
      (C at a time, in one asyncio loop; the echo server in a process of its own);
      holds them all, prints "open" on a line of its own, waits for a line
      on stdin (or for PATH to exist), then closes them all at once.

  users --logins N --password W > FILE
      A users file (login:hash lines) for user0 .. user(N-1), all with
      password W (one salt, so one hash: quick to make).

  churn --port P --logins N --password W --seconds S --hold-max H [--first F] [--stop-file PATH]
      Each of the N logins (userF onwards), in a thread of its own, connects, logs in, opens
      an IP flow (its lease), holds it up to H s and leaves, over and over
      for S s (or until PATH exists); a server that goes away (killed, restarting) is retried.
      Prints one JSON line: leases granted, tunnels the server ended, and
      every address handed to a login while another still held it
      ("conflicts") or a login's address that changed ("changed"), and
      each login's last address ("last").

  storm --port P --tunnels N --echo-port E --limit S [--lost-file PATH]
      Holds N tunnels (no login), each proven by one echo through a TCP flow;
      prints "up N" once all are. When the server goes away (the script
      SIGKILLs and restarts it, then writes a line to stdin or creates PATH), each comes back with the client's own
      backoff (ReconnectBackoff: doubling from 0.5 s, each wait at random in
      the upper half of its step), while a probe client opens a tunnel and
      echoes every 100 ms. Prints one JSON line: seconds from the loss to all
      back, tunnels back per second, and the probe's p50/p99/max (attempts
      that reached the listener). The clients share one asyncio loop; the echo
      server and the probe run in processes of their own (a thread per client
      spent two cores on Python's lock, and the storm measured the helper).

Connects to 127.0.0.1 only: the script runs it inside its own network
namespace. Each tunnel comes from its own loopback address (127.1.x.y), as
clients on their own machines would.
"""

import argparse
import asyncio
import ctypes
import hashlib
import json
import os
import random
import plistlib
import resource
import select
import signal
import socket
import ssl
import struct
import sys
import threading
import time


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


def peak(args):
    """The tunnels in one asyncio loop and the echo server in a process of its own: a thread per
    tunnel (and per echoed flow) took 7 GB and the machine's every core at 8,000 tunnels, so the
    peak measured the helper rather than the server."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    echo = os.fork()
    if echo == 0:
        die_with_parent()
        storm_echo_server(args.echo_port)
        os._exit(0)
    try:
        time.sleep(0.2)  # the echo server listens
        asyncio.run(peak_tunnels(args))
    finally:
        os.kill(echo, 9)
        os.waitpid(echo, 0)


async def peak_tunnels(args):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    gate = asyncio.Semaphore(args.concurrency)

    async def opened(index):
        source = "127.1.%d.%d" % (index // 250, index % 250 + 1)
        async with gate:
            _, writer = await asyncio.wait_for(echo_tunnel_async(args.port, source, args.echo_port, context, args.bytes), 60)
            return writer

    results = await asyncio.gather(*(opened(index) for index in range(args.tunnels)), return_exceptions=True)
    tunnels = [result for result in results if not isinstance(result, BaseException)]
    failures = [result for result in results if isinstance(result, BaseException)]
    for error in failures[:3]:
        print("tunnel failed: %r" % error, file=sys.stderr)
    print("open %d failed %d" % (len(tunnels), len(failures)), flush=True)
    if args.close_file:
        while not os.path.exists(args.close_file):
            await asyncio.sleep(0.05)
    else:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for writer in tunnels:
        writer.close()
    await asyncio.gather(*(writer.wait_closed() for writer in tunnels), return_exceptions=True)


def users(args):
    salt = os.urandom(16)
    iterations = 100000  # the least a users file may hold: checks stay cheap
    digest = hashlib.pbkdf2_hmac("sha256", args.password.encode(), salt, iterations)
    record = "pbkdf2-sha256$%d$%s$%s" % (iterations, salt.hex(), digest.hex())
    for index in range(args.logins):
        print("user%d:%s" % (index, record))


class LeaseLedger:
    """Who holds which address now, as the clients see it, and what went wrong."""

    def __init__(self):
        self.lock = threading.Lock()
        self.holders = {}
        self.last = {}
        self.leases = self.kept = self.ended_by_server = 0
        self.refused = {}
        self.conflicts = []
        self.changed = []

    def granted(self, login, address):
        with self.lock:
            self.leases += 1
            other = self.holders.get(address)
            if other is not None and other != login:
                self.conflicts.append("%s to %s while %s held it" % (address, login, other))
            previous = self.last.get(login)
            if previous is not None:
                if previous == address:
                    self.kept += 1
                else:
                    self.changed.append("%s: %s then %s" % (login, previous, address))
            self.holders[address] = login
            self.last[login] = address

    def left(self, login, address, by_server):
        with self.lock:
            if self.holders.get(address) == login:
                del self.holders[address]
            if by_server:
                self.ended_by_server += 1

    def refusal(self, what):
        with self.lock:
            self.refused[what] = self.refused.get(what, 0) + 1


def churn_one(args, index, ledger, deadline):
    login = "user%d" % (args.first + index)
    source = "127.2.%d.%d" % (index // 250, index % 250 + 1)
    failed = False
    while time.monotonic() < deadline and not (args.stop_file and os.path.exists(args.stop_file)):
        if failed:
            time.sleep(random.uniform(0.25, 1))  # as a client backs off: a refused or dropped login is not retried at once
        failed = True
        try:
            tls = tls_connect(args.port, source, timeout=10)
        except OSError:
            continue  # the server is away: killed, or starting again
        try:
            reader = Reader(tls)
            tls.sendall(frame({"identifier": 0, "command": 10, "login": login, "password": args.password}))
            answer = reader.next()
            if answer is None or answer.get("result-code") != 0:
                ledger.refusal("login %s" % (None if answer is None else answer.get("result-code")))
                continue
            tls.sendall(frame({"identifier": 1, "command": 6, "tunnel-type": 1}))
            while True:
                answer = reader.next()
                if answer is None or answer.get("command") == 7:
                    break
            if answer is None or answer.get("result-code") != 0:
                ledger.refusal("open %s" % (None if answer is None else answer.get("result-code")))
                continue
            address = answer.get("configuration", {}).get("IPv4", {}).get("Address")
            ledger.granted(login, address)
            failed = False
            # Held while reading: a server that dies ends the read at once, before a restarted one can lease again.
            leave = time.monotonic() + random.uniform(0, args.hold_max)
            by_server = False
            while True:
                remaining = leave - time.monotonic()
                if remaining <= 0:
                    break
                tls.settimeout(remaining)
                try:
                    if reader.next() is None:
                        by_server = True
                        break
                except socket.timeout:
                    break
                except OSError:
                    by_server = True
                    break
            ledger.left(login, address, by_server)
        except OSError:
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass


def churn(args):
    ledger = LeaseLedger()
    deadline = time.monotonic() + args.seconds
    threads = [threading.Thread(target=churn_one, args=(args, index, ledger, deadline), daemon=True) for index in range(args.logins)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({
        "logins": args.logins, "leases": ledger.leases, "kept": ledger.kept, "ended-by-server": ledger.ended_by_server,
        "refused": ledger.refused, "conflicts": ledger.conflicts, "changed": ledger.changed,
        "last": ledger.last,
    }), flush=True)


def echo_tunnel(port, source, echo_port, timeout):
    """A tunnel with one TCP flow to the echo server, proven by one echo; the socket and its reader."""
    tls = tls_connect(port, source, timeout=timeout)
    try:
        reader = Reader(tls)
        tls.sendall(frame({"identifier": 1, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": "127.0.0.1", "port": echo_port}))
        answer = reader.next()
        while answer is not None and answer.get("command") != 7:
            answer = reader.next()
        if answer is None or answer.get("result-code") != 0:
            raise OSError("flow refused: %r" % answer)
        tls.sendall(frame({"identifier": 1, "command": 1, "data": b"ping"}))
        answer = reader.next()
        while answer is not None and answer.get("command") != 1:
            answer = reader.next()
        if answer is None:
            raise OSError("closed before the echo")
        return tls, reader
    except BaseException:
        tls.close()
        raise


async def read_frame(reader):
    length = struct.unpack("<I", await reader.readexactly(4))[0]
    return plistlib.loads(await reader.readexactly(length - 4))


async def echo_tunnel_async(port, source, echo_port, context, size=4):
    """echo_tunnel's asyncio form: the stream pair of a tunnel whose TCP flow echoed SIZE bytes,
    a piece at a time, each echoed before the next (never more in flight than the flow's window)."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost", local_addr=(source, 0))
    try:
        writer.write(frame({"identifier": 1, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": "127.0.0.1", "port": echo_port}))
        answer = await read_frame(reader)
        while answer.get("command") != 7:
            answer = await read_frame(reader)
        if answer.get("result-code") != 0:
            raise OSError("flow refused: %r" % answer)
        sent = received = 0
        while sent < size:
            piece = min(16384, size - sent)
            writer.write(frame({"identifier": 1, "command": 1, "data": b"x" * piece}))
            sent += piece
            while received < sent:
                message = await read_frame(reader)
                if message.get("command") == 1:
                    received += len(message.get("data", b""))
        return reader, writer
    except BaseException:
        writer.close()
        raise


def die_with_parent():
    """In a forked child: ends it when the helper ends, however that happens. A test that stops the
    helper (SIGTERM) skips its `finally`, and the echo server was left running."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the parent ended before the line above
        os._exit(0)


def storm_echo_server(port):
    """The flows' destination, in a process of its own."""
    async def serve(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass  # the server reset the flow as its tunnel closed
        writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=4096)
        await server.serve_forever()

    asyncio.run(main())


def storm_probe(port, echo_port, go, results, limit):
    """After a byte on `go`: a tunnel and an echo every 100 ms, each timed, until a byte on `go` again
    or `limit` s; then the times and the failures as one JSON line on `results`."""
    os.read(go, 1)
    probes, failures = [], 0
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            tls, _ = echo_tunnel(port, "127.4.0.1", echo_port, 10)
            probes.append(time.monotonic() - started)
            tls.close()
        except ConnectionRefusedError:
            pass  # not listening yet: the restart is under way
        except OSError:
            failures += 1
        readable, _, _ = select.select([go], [], [], 0.1)
        if readable:
            break
    os.write(results, (json.dumps({"probes": probes, "failures": failures}) + "\n").encode())


def storm(args):
    """The clients in one asyncio loop; the echo server and the probe in processes of their own, so
    that neither the probe's times nor the flows wait on the clients' Python."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    children = []
    echo = os.fork()
    if echo == 0:
        die_with_parent()
        storm_echo_server(args.echo_port)
        os._exit(0)
    children.append(echo)
    go_read, go_write = os.pipe()
    results_read, results_write = os.pipe()
    probe = os.fork()
    if probe == 0:
        die_with_parent()
        storm_probe(args.port, args.echo_port, go_read, results_write, args.limit)
        os._exit(0)
    children.append(probe)
    try:
        time.sleep(0.2)  # the echo server listens
        result = asyncio.run(storm_clients(args, go_write))
        os.write(go_write, b"s")
        probed = json.loads(os.fdopen(results_read).readline())
    finally:
        for child in children:
            try:
                os.kill(child, 9)
                os.waitpid(child, 0)
            except OSError:
                pass
    probes = sorted(probed["probes"])

    def percentile(fraction):
        return round(probes[min(len(probes) - 1, int(fraction * len(probes)))], 3) if probes else None

    result.update({
        "probes": len(probes), "probe-failures": probed["failures"],
        "probe-p50": percentile(0.5), "probe-p99": percentile(0.99), "probe-max": round(probes[-1], 3) if probes else None,
    })
    print(json.dumps(result), flush=True)


async def storm_clients(args, go):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    state = {"up": 0, "lost": None, "back": {}}
    everyone_up = asyncio.Event()
    everyone_back = asyncio.Event()

    async def client(index):
        source = "127.3.%d.%d" % (index // 250, index % 250 + 1)
        attempt, after_loss, dropped = 0, False, 0.0
        while True:
            if after_loss:
                attempt += 1
                bound = min(0.5 * 2 ** (attempt - 1), 30)
                await asyncio.sleep(random.uniform(bound / 2, bound))
            try:
                reader, writer = await asyncio.wait_for(echo_tunnel_async(args.port, source, args.echo_port, context), 30)
            except (OSError, EOFError, asyncio.TimeoutError):
                after_loss = True
                continue
            state["up"] += 1
            # Back after the kill: lost at most a moment before the script said it killed the server.
            if state["lost"] is not None and dropped >= state["lost"] - 2:
                state["back"].setdefault(index, time.monotonic())
                if len(state["back"]) == args.tunnels:
                    everyone_back.set()
            if state["up"] == args.tunnels:
                everyone_up.set()
            attempt, after_loss = 0, True
            try:
                while await reader.read(65536):
                    pass
            except OSError:
                pass
            writer.close()
            dropped = time.monotonic()
            state["up"] -= 1
            everyone_up.clear()

    clients = [asyncio.create_task(client(index)) for index in range(args.tunnels)]
    try:
        await asyncio.wait_for(everyone_up.wait(), args.limit)
    except asyncio.TimeoutError:
        print("only %d of %d tunnels came up" % (state["up"], args.tunnels), file=sys.stderr)
        sys.exit(1)
    print("up %d" % args.tunnels, flush=True)
    if args.lost_file:
        while not os.path.exists(args.lost_file):  # the test has killed the server
            await asyncio.sleep(0.05)
    else:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the script has killed the server
    state["lost"] = time.monotonic()
    os.write(go, b"g")
    try:
        await asyncio.wait_for(everyone_back.wait(), args.limit)
    except asyncio.TimeoutError:
        pass
    for task in clients:
        task.cancel()
    back = sorted(state["back"].values())
    lost = state["lost"]
    per_second = [0] * (int((back[-1] - lost) if back else 0) + 1)
    for moment in back:
        per_second[int(moment - lost)] += 1
    return {
        "tunnels": args.tunnels, "back": len(back), "all-back-seconds": round(back[-1] - lost, 2) if len(back) == args.tunnels else None,
        "back-per-second": per_second,
    }


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
    command.add_argument("--close-file", help="close them all once this file exists (instead of a line on stdin)")
    command = commands.add_parser("users")
    command.add_argument("--logins", type=int, required=True)
    command.add_argument("--password", required=True)
    command = commands.add_parser("churn")
    command.add_argument("--port", type=int, required=True)
    command.add_argument("--logins", type=int, default=200)
    command.add_argument("--password", required=True)
    command.add_argument("--seconds", type=float, default=30)
    command.add_argument("--hold-max", type=float, default=2)
    command.add_argument("--first", type=int, default=0)
    command.add_argument("--stop-file", help="end early once this file exists")
    command = commands.add_parser("storm")
    command.add_argument("--port", type=int, required=True)
    command.add_argument("--tunnels", type=int, default=1000)
    command.add_argument("--echo-port", type=int, default=7008)
    command.add_argument("--limit", type=float, default=120)
    command.add_argument("--lost-file", help="the server was killed once this file exists (instead of a line on stdin)")
    args = parser.parse_args()
    {"storm": storm, "login": login, "recover": recover, "peak": peak, "users": users, "churn": churn}[args.command](args)


if __name__ == "__main__":
    main()
