#!/usr/bin/env python3
"""A strict stand-in for `tunnel_server` of Apple's SimpleTunnel sample (2016
release; see sample_wire.py for where its source is), for tests of our client
on loopback. Plain TCP, as the sample serves it. Prints the port it listens
on, then serves until killed. App-layer TCP flows only; what it does:
- ends the tunnel on a frame above 128 KiB (tunnel_server/ServerTunnel.swift:94)
  or a command it does not know (SimpleTunnelServices/Tunnel.swift:284-291);
- answers fetchConfiguration with the configuration minus IPv4, identifier 0
  (ServerTunnel.swift:280-284);
- reads `port` of an open only as a number: any other open gets no answer at
  all (ServerTunnel.swift:155-157);
- never checks whether an identifier is in use: a new open replaces the entry
  (Tunnel.swift:132-134, addConnection);
- answers 0 once connected, 4 then close 4 when connecting fails
  (ServerConnection.swift:183-193);
- reads its destination 8192 bytes at a time, one `data` each (ServerConnection.swift:158-176);
- stops reading a flow's destination on `suspend`, goes on at `resume` (ServerConnection.swift:79-90);
- sends `suspend` when a write to the destination is partial and `resume`
  once what waited has gone (ServerConnection.swift:92-110, :120-136);
- on the destination's EOF sends close 3 and forgets the flow (ServerConnection.swift:167-171);
- on any close from the client forgets the flow and closes the destination
  both ways (Connection.swift:104-121 makes every close "all"; ServerConnection.swift:46-70);
- drops data for an identifier it does not know (Tunnel.swift:300-301 and ServerTunnel's handleMessage).
"""

import argparse
import select
import socket
import sys
import threading

from sample_wire import (CLOSE, CLOSE_ALL, CLOSE_WRITE, DATA, FETCH_CONFIGURATION, OPEN, OPEN_RESULT, RESUME,
                         SUSPEND, TunnelSocket, message)

KNOWN_COMMANDS = range(1, 10)


class ServerConnection:
    """One TCP flow and its destination socket."""

    def __init__(self, tunnel, identifier):
        self.tunnel = tunnel
        self.identifier = identifier
        self.sock = None
        self.pending = bytearray()
        self.readable = threading.Event()
        self.readable.set()
        self.closed = False
        self.closing = False
        self.lock = threading.Lock()

    def open(self, host, port):
        try:
            self.sock = socket.create_connection((host, port), timeout=10)
        except OSError:
            # ServerConnection.swift:183-188: the read stream's error: result 4, then close 4.
            self.tunnel.send(message(self.identifier, OPEN_RESULT, result_code=4))
            self.tunnel.send(message(self.identifier, CLOSE, close_type=CLOSE_ALL))
            self.tunnel.forget(self)
            return
        self.sock.settimeout(None)
        if self.closed:
            self.sock.close()
            return
        self.tunnel.send(message(self.identifier, OPEN_RESULT, result_code=0))
        threading.Thread(target=self._read_destination, daemon=True).start()
        with self.lock:
            if self.pending:
                threading.Thread(target=self._drain, daemon=True).start()

    def _read_destination(self):
        while True:
            self.readable.wait()
            try:
                chunk = self.sock.recv(8192)
            except OSError:
                chunk = b""
            if self.closed or self.closing:
                return
            if not chunk:
                # ServerConnection.swift:167-171: close 3, then the flow is gone.
                self.tunnel.send(message(self.identifier, CLOSE, close_type=CLOSE_WRITE))
                self.close()
                return
            self.tunnel.send(message(self.identifier, DATA, data=chunk))

    def write(self, data):
        with self.lock:
            if self.closed or self.closing:
                return
            if self.sock is None:
                # Still connecting: the write stream takes nothing yet, so the
                # client is suspended and the bytes wait (ServerConnection.swift:97-109).
                if not self.pending:
                    self.tunnel.send(message(self.identifier, SUSPEND))
                self.pending += data
                return
            written = 0
            if not self.pending:
                try:
                    written = self.sock.send(data, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    written = 0
                if written < len(data):
                    # ServerConnection.swift:100-104: a partial write suspends the client.
                    self.tunnel.send(message(self.identifier, SUSPEND))
                    threading.Thread(target=self._drain, daemon=True).start()
            self.pending += data[written:]

    def _drain(self):
        while True:
            select.select([], [self.sock], [], 1.0)
            with self.lock:
                if self.closed:
                    return
                try:
                    written = self.sock.send(self.pending, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    written = 0
                except OSError:
                    return
                del self.pending[:written]
                if not self.pending:
                    if self.closing:
                        # ServerConnection.swift:128-132: closed while bytes waited: close once they are gone.
                        self._close_socket()
                    else:
                        # ServerConnection.swift:128-135: everything went: resume.
                        self.tunnel.send(message(self.identifier, RESUME))
                    return

    def close(self):
        """The flow is gone (Connection.swift:104-121); the destination's write side
        closes once nothing waits for it (ServerConnection.swift:46-58)."""
        with self.lock:
            if self.closed or self.closing:
                return
            self.closing = True
            waiting = bool(self.pending) and self.sock is not None
        self.tunnel.forget(self)
        if not waiting:
            self._close_socket()

    def _close_socket(self):
        self.closed = True
        self.readable.set()
        if self.sock is not None:
            try:
                # shutdown first: close alone would wait for the reader thread's recv.
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()


class ServerTunnel:
    def __init__(self, sock, configuration):
        self.wire = TunnelSocket(sock)
        self.configuration = configuration
        self.connections = {}
        self.lock = threading.Lock()

    def send(self, properties):
        try:
            self.wire.send(properties)
        except OSError:
            pass

    def forget(self, connection):
        with self.lock:
            if self.connections.get(connection.identifier) is connection:
                del self.connections[connection.identifier]

    def serve(self):
        try:
            while True:
                received = self.wire.receive()
                if received is None or not self.handle(received):
                    break
        except (OSError, ValueError):
            pass
        with self.lock:
            connections = list(self.connections.values())
        for connection in connections:
            connection.close()
        self.wire.close()

    def handle(self, properties):
        command = properties.get("command")
        # Tunnel.swift:284-291: a missing or unknown command ends the tunnel.
        if type(command) is not int or command not in KNOWN_COMMANDS:
            return False
        identifier = properties.get("identifier")
        with self.lock:
            connection = self.connections.get(identifier) if command not in (OPEN, 5) else None
        if connection is None:
            if command == OPEN:
                self.open(properties)
            elif command == FETCH_CONFIGURATION:
                personalized = {key: value for key, value in self.configuration.items() if key != "IPv4"}
                self.send(message(0, FETCH_CONFIGURATION, configuration=personalized))
            return True
        if command == DATA:
            data = properties.get("data")
            if isinstance(data, bytes):
                connection.write(data)
        elif command == SUSPEND:
            connection.readable.clear()
        elif command == RESUME:
            connection.readable.set()
        elif command == CLOSE:
            connection.close()
        return True

    def open(self, properties):
        identifier = properties.get("identifier")
        host, port = properties.get("host"), properties.get("port")
        # ServerTunnel.swift:141-157: only an app-layer TCP open with a string host and a numeric port is served.
        if type(identifier) is not int or properties.get("tunnel-type") != 0 or properties.get("app-proxy-flow-type") != 1:
            return
        if not isinstance(host, str) or type(port) is not int:
            return
        connection = ServerConnection(self, identifier)
        with self.lock:
            self.connections[identifier] = connection
        threading.Thread(target=connection.open, args=(host, port), daemon=True).start()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dns-server", default="127.0.0.53", help="what fetchConfiguration reports (never used)")
    args = parser.parse_args()
    configuration = {"DNS": {"Servers": [args.dns_server], "SearchDomains": ["test"]}}
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        sock, _ = listener.accept()
        tunnel = ServerTunnel(sock, configuration)
        threading.Thread(target=tunnel.serve, daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
