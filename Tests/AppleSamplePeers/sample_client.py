#!/usr/bin/env python3
"""A strict stand-in for the app proxy of Apple's SimpleTunnel sample (2016
release; see sample_wire.py for where its source is), for tests of our server
on loopback (plaintext: the sample's client never uses TLS,
2016: SimpleTunnelServices/ClientTunnel.swift:72, enableTLS: false).

Each subcommand runs one scenario against the server at --port and prints one
JSON object. What the sample does, and so what this peer does:
- never sends anything unasked: no keepalive (ClientTunnel.swift has none);
- asks for the configuration once the tunnel is up (AppProxyProvider.swift:76-83);
- names a flow by `flow.hash` (ClientAppProxyConnection.swift:28), an object's
  address, which comes back once that flow object is gone;
- sends `port` as an integer (ClientAppProxyConnection.swift:164);
- reads the application only after a successful openResult
  (ClientAppProxyConnection.swift:101-118, then :170-193), so never sends early data;
- sends each read of the application as one `data` (ClientAppProxyConnection.swift:178-192;
  the piece size is NEAppProxyTCPFlow's, 32 KiB here);
- ignores `suspend` and `resume` (Connection.swift:141-146; the app proxy does not override them);
- close 3 on the application's EOF (ClientAppProxyConnection.swift:185-189),
  2 when writing to the application fails (:196-204), 4 on errors, a failed open
  included (:64-70, :102-105);
- forgets a flow at the first close it receives, of any type (Connection.swift:104-121
  makes any close "all"), and sends nothing for it afterwards;
- the packet tunnel (subcommand packet-tunnel): see packet_tunnel below.
"""

import argparse
import hashlib
import json
import queue
import random
import socket
import struct
import sys
import threading
import time

from sample_wire import (CLOSE, CLOSE_ALL, CLOSE_READ, CLOSE_WRITE, DATA, FETCH_CONFIGURATION, OPEN,
                         OPEN_RESULT, PACKETS, RESUME, SUSPEND, TunnelSocket, message)

PIECE = 32 * 1024


class SampleAppProxy:
    """One tunnel: a reader thread sorts the server's messages per identifier."""

    def __init__(self, port: int):
        self.tunnel = TunnelSocket.connect(port)
        self.inbox = {}
        self.lock = threading.Lock()
        self.suspends_ignored = 0
        self.closed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        # 2016: AppProxyProvider.swift:76-83, tunnelDidOpen sends fetchConfiguration.
        self.tunnel.send(message(0, FETCH_CONFIGURATION))
        self.configuration = self.next(0, timeout=10)

    def _read(self):
        try:
            while True:
                received = self.tunnel.receive()
                if received is None:
                    break
                command = received.get("command")
                if command in (SUSPEND, RESUME):
                    # Connection.swift:141-146: suspend() and resume() do nothing.
                    self.suspends_ignored += command == SUSPEND
                    continue
                self._queue(received.get("identifier")).put(received)
        except (OSError, ValueError):
            pass
        self.closed.set()

    def _queue(self, identifier):
        with self.lock:
            return self.inbox.setdefault(identifier, queue.Queue())

    def next(self, identifier, timeout=20.0):
        try:
            return self._queue(identifier).get(timeout=timeout)
        except queue.Empty:
            return None

    def open_tcp(self, identifier, host, port):
        """ClientAppProxyTCPConnection.open(): tunnel-type 0, host, integer port, flow type 1
        (ClientAppProxyConnection.swift:160-167); returns the result code."""
        self.tunnel.send(message(identifier, OPEN, tunnel_type=0, host=host, port=port, app_proxy_flow_type=1))
        answer = self.next(identifier)
        if answer is None or answer.get("command") != OPEN_RESULT:
            return None
        result = answer.get("result-code")
        if result != 0:
            # :102-105 then :64-70: a failed open is closed with type 4.
            self.tunnel.send(message(identifier, CLOSE, close_type=CLOSE_ALL))
        return result

    def send_application_bytes(self, identifier, payload: bytes):
        for offset in range(0, len(payload), PIECE):
            self.tunnel.send(message(identifier, DATA, data=payload[offset:offset + PIECE]))

    def collect_until_close(self, identifier, timeout=60.0):
        """What the server sends for the flow until its first close, which makes
        the sample forget the flow (Connection.swift:104-121)."""
        received = bytearray()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            item = self.next(identifier, timeout=max(0.1, deadline - time.monotonic()))
            if item is None:
                break
            if item.get("command") == DATA:
                received += item.get("data", b"")
            elif item.get("command") == CLOSE:
                return bytes(received), item.get("close-type", CLOSE_ALL)
        return bytes(received), None


def pattern(count: int, seed: int) -> bytes:
    """Bytes that never repeat in step with the pieces, so a lost, doubled or moved piece changes the hash."""
    return random.Random(seed).randbytes(count)


def transfer(args):
    """A TCP flow that sends --bytes then the application's EOF, and reads what comes back."""
    proxy = SampleAppProxy(args.port)
    result = proxy.open_tcp(args.identifier, "127.0.0.1", args.destination)
    payload = pattern(args.bytes, args.identifier & 0xFFFF)
    report = {"openResult": result}
    if result == 0:
        started = time.monotonic()
        proxy.send_application_bytes(args.identifier, payload)
        # :185-189: the application's EOF is sent as close 3.
        proxy.tunnel.send(message(args.identifier, CLOSE, close_type=CLOSE_WRITE))
        received, close_type = proxy.collect_until_close(args.identifier, timeout=args.timeout)
        report.update(
            sent=len(payload), sentSHA256=hashlib.sha256(payload).hexdigest(),
            received=len(received), receivedSHA256=hashlib.sha256(received).hexdigest(),
            closeType=close_type, suspendsIgnored=proxy.suspends_ignored,
            seconds=round(time.monotonic() - started, 2), tunnelOpen=not proxy.closed.is_set())
    print(json.dumps(report))


def reuse(args):
    """flow.hash reuse: the first flow's destination speaks and closes; the server's
    close makes the sample forget the flow (it sends no close back), and the next
    flow object gets the same hash."""
    proxy = SampleAppProxy(args.port)
    first = proxy.open_tcp(args.identifier, "127.0.0.1", args.speaker)
    greeting, first_close = proxy.collect_until_close(args.identifier)
    second = proxy.open_tcp(args.identifier, "127.0.0.1", args.destination)
    echoed, second_close = b"", None
    if second == 0:
        proxy.send_application_bytes(args.identifier, b"second flow")
        proxy.tunnel.send(message(args.identifier, CLOSE, close_type=CLOSE_WRITE))
        echoed, second_close = proxy.collect_until_close(args.identifier)
    print(json.dumps({
        "firstOpenResult": first, "greeting": greeting.decode(errors="replace"), "firstCloseType": first_close,
        "secondOpenResult": second, "secondFlowReceived": echoed.decode(errors="replace"), "secondCloseType": second_close,
    }))


def open_identifier_zero(args):
    """ClientTunnelConnection.swift:39-40 picks an IP flow's identifier with arc4random(),
    which can be 0; an app flow's `flow.hash` cannot. Either way: what does 0 get?"""
    proxy = SampleAppProxy(args.port)
    result = proxy.open_tcp(0, "127.0.0.1", args.destination)
    proxy.tunnel.send(message(0, FETCH_CONFIGURATION))
    still_answers = proxy.next(0, timeout=10) is not None
    print(json.dumps({"openResult": result, "tunnelStillAnswers": still_answers}))


def failed_open(args):
    """A refused open: the sample answers it with close 4 (:102-105, :64-70); the tunnel goes on."""
    proxy = SampleAppProxy(args.port)
    result = proxy.open_tcp(args.identifier, "127.0.0.1", args.destination)
    proxy.tunnel.send(message(0, FETCH_CONFIGURATION))
    still_answers = proxy.next(0, timeout=10) is not None
    print(json.dumps({"openResult": result, "tunnelStillAnswers": still_answers, "configuration": proxy.configuration is not None}))


def write_error(args):
    """Writing to the application failed: close 2 (:196-204). The server must stop
    sending for the flow; the application's own bytes still go, then its EOF."""
    proxy = SampleAppProxy(args.port)
    result = proxy.open_tcp(args.identifier, "127.0.0.1", args.destination)
    proxy.tunnel.send(message(args.identifier, CLOSE, close_type=CLOSE_READ))
    proxy.send_application_bytes(args.identifier, b"echo me")
    proxy.tunnel.send(message(args.identifier, CLOSE, close_type=CLOSE_WRITE))
    after = proxy.next(args.identifier, timeout=1.5)
    proxy.tunnel.send(message(0, FETCH_CONFIGURATION))
    still_answers = proxy.next(0, timeout=10) is not None
    print(json.dumps({"openResult": result, "messageAfterCloseRead": after is not None, "tunnelStillAnswers": still_answers}))


def ipv4_udp(source: str, destination: str, payload: bytes) -> bytes:
    total = 20 + 8 + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 17, 0,
                         socket.inet_aton(source), socket.inet_aton(destination))
    return header + struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0) + payload


def packet_tunnel(args):
    """The sample's packet tunnel: at tunnel open, an IP open (tunnel-type 1) under an
    identifier from arc4random() (ClientTunnelConnection.swift:39-40, :46-51;
    PacketTunnelProvider.swift:72-75), no fetchConfiguration; after the open result
    each read of the packet flow goes as one `packets` with its `protocols`, 2 for IPv4
    (ClientTunnelConnection.swift:61-87); what comes back is written to the device
    (:108-110)."""
    tunnel = TunnelSocket.connect(args.port)
    tunnel.send(message(args.identifier, OPEN, tunnel_type=1))
    answer = tunnel.receive()
    configuration = (answer or {}).get("configuration") or {}
    address = (configuration.get("IPv4") or {}).get("Address")
    report = {"openResult": (answer or {}).get("result-code"), "address": address}
    if report["openResult"] == 0 and address:
        packets = [ipv4_udp(address, args.destination, bytes([index]) * 8) for index in range(args.count)]
        tunnel.send(message(args.identifier, PACKETS, packets=packets, protocols=[2] * len(packets)))
        received = []
        tunnel.sock.settimeout(args.timeout)
        try:
            while len(received) < args.expect:
                item = tunnel.receive()
                if item is None:
                    break
                if item.get("command") == PACKETS and item.get("identifier") == args.identifier:
                    received += list(zip(item.get("packets", []), item.get("protocols", [])))
        except OSError:
            pass
        report.update(sent=len(packets), received=len(received),
                      receivedProtocols=sorted({number for _, number in received}),
                      receivedFromLease=all(packet[16:20] == socket.inet_aton(address) for packet, _ in received))
    print(json.dumps(report))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="the tunnel server's plaintext port on 127.0.0.1")
    commands = parser.add_subparsers(dest="scenario", required=True)
    one = commands.add_parser("transfer")
    one.add_argument("--destination", type=int, required=True)
    one.add_argument("--identifier", type=int, default=4345318496)
    one.add_argument("--bytes", type=int, default=1 << 20)
    one.add_argument("--timeout", type=float, default=60.0)
    one.set_defaults(run=transfer)
    one = commands.add_parser("reuse")
    one.add_argument("--speaker", type=int, required=True)
    one.add_argument("--destination", type=int, required=True)
    one.add_argument("--identifier", type=int, default=4345318496)
    one.set_defaults(run=reuse)
    one = commands.add_parser("open-zero")
    one.add_argument("--destination", type=int, required=True)
    one.set_defaults(run=open_identifier_zero)
    one = commands.add_parser("failed-open")
    one.add_argument("--destination", type=int, required=True)
    one.add_argument("--identifier", type=int, default=4345318512)
    one.set_defaults(run=failed_open)
    one = commands.add_parser("write-error")
    one.add_argument("--destination", type=int, required=True)
    one.add_argument("--identifier", type=int, default=4345318528)
    one.set_defaults(run=write_error)
    one = commands.add_parser("packet-tunnel")
    one.add_argument("--destination", required=True, help="where the packets go (an IPv4 address)")
    one.add_argument("--identifier", type=int, default=2718281828)
    one.add_argument("--count", type=int, default=5)
    one.add_argument("--expect", type=int, default=3, help="packets to wait for from the server")
    one.add_argument("--timeout", type=float, default=20.0)
    one.set_defaults(run=packet_tunnel)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
