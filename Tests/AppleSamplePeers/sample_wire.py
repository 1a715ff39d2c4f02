"""The wire as Apple's SimpleTunnel sample speaks it (standard library only).

References are to the sample's 2016 release ("2016:") or its 2015 release
("2015:"), file and line, as Apple published them (the 2016 release as
imported unmodified in github.com/liufsd/SimpleTunnelCustomizedNetworking-
UsingtheNetworkExtensionFramework at e11e5e5, the 2015 release as in
github.com/ios-sample-code/SimpleTunnel).
"""

import plistlib
import socket
import struct
import threading

# 2016: SimpleTunnelServices/Tunnel.swift:12-22 (command 9 is new in 2016).
DATA, SUSPEND, RESUME, CLOSE, DNS, OPEN, OPEN_RESULT, PACKETS, FETCH_CONFIGURATION = range(1, 10)
# 2016: SimpleTunnelServices/Connection.swift:13-18.
CLOSE_NONE, CLOSE_READ, CLOSE_WRITE, CLOSE_ALL = 1, 2, 3, 4
# 2016: SimpleTunnelServices/Tunnel.swift:96, maximumMessageSize.
MAXIMUM_MESSAGE_SIZE = 128 * 1024


def encode(message: dict) -> bytes:
    """One frame: a 32-bit length that counts itself, in host order (little-endian
    on every Apple device), then a binary property list
    (2016: SimpleTunnelServices/Tunnel.swift:168-172)."""
    payload = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
    return struct.pack("<I", len(payload) + 4) + payload


def message(identifier: int, command: int, **extra) -> dict:
    """createMessagePropertiesForConnection: identifier and command, then the command's keys."""
    properties = {"identifier": identifier, "command": command}
    for key, value in extra.items():
        properties[key.replace("_", "-")] = value
    return properties


class TunnelSocket:
    """A tunnel connection: whole frames in, whole frames out (one writer at a time)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.write_lock = threading.Lock()

    @classmethod
    def connect(cls, port: int, host: str = "127.0.0.1", timeout: float = 30.0):
        return cls(socket.create_connection((host, port), timeout=timeout))

    def send(self, message: dict):
        frame = encode(message)
        with self.write_lock:
            self.sock.sendall(frame)

    def receive(self):
        """The next message, or None when the tunnel closed. A length above the
        maximum ends the tunnel (2016: SimpleTunnelServices/ClientTunnel.swift:112-116,
        tunnel_server/ServerTunnel.swift:94)."""
        header = self._read_exactly(4)
        if header is None:
            return None
        (length,) = struct.unpack("<I", header)
        if length > MAXIMUM_MESSAGE_SIZE or length < 4:
            raise ValueError(f"frame length {length} out of range")
        payload = self._read_exactly(length - 4)
        if payload is None:
            return None
        return plistlib.loads(payload)

    def _read_exactly(self, count: int):
        chunks = []
        while count > 0:
            chunk = self.sock.recv(min(count, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
