#!/usr/bin/env python3
"""Golden wire fixtures for the SimpleTunnel protocol (see PROTOCOL.md, A1-A6, B2, B5).

Run from anywhere:

    python3 Fixtures/generate.py            # rewrite every fixture, then verify
    python3 Fixtures/generate.py --verify   # only verify what is on disk
    swift Fixtures/generate-cf.swift        # (optional) write the cf-*.bin frames with CoreFoundation
    python3 Fixtures/generate.py --verify   # ...and verify those too

Standard library only. Everything is deterministic: the same script writes the
same bytes every time. The script owns `valid/`, `invalid/`, `cf-source/` and
`README.md` in this folder and deletes any file there that it did not write
(except the `cf-*.bin` frames that generate-cf.swift writes for fixtures this
table declares).

Layout of this file:
  1. byte-level helpers (frames, plistlib wrappers, a tiny hand assembler for
     broken binary property lists, IP/DNS packet builders)
  2. the table of VALID fixtures
  3. the table of INVALID fixtures
  4. a reference decoder (plistlib + the rules of PROTOCOL.md) used to check
     that every meaning/error in the tables is what the rules say
  5. writing, README generation, verification
"""

from __future__ import annotations

import argparse
import json
import math
import plistlib
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
VALID_DIR = HERE / "valid"
INVALID_DIR = HERE / "invalid"
CF_SOURCE_DIR = HERE / "cf-source"
README = HERE / "README.md"

MAX_FRAME = 131072  # largest allowed value of the length prefix (A1)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Dispositions (what the receiver does with a bad frame / message).
CLOSE = "closeTunnel"
IGNORE = "ignore"
DROP = "drop"
OPENFAIL = "openFailure"

COMMANDS = {
    1: "data", 2: "suspend", 3: "resume", 4: "close", 5: "dns", 6: "open",
    7: "openResult", 8: "packets", 9: "fetchConfiguration", 10: "authenticate",
    11: "authenticateResult",
}
CMD = {name: number for number, name in COMMANDS.items()}
RESULTS = {0: "success", 1: "invalidParameter", 2: "noSuchHost", 3: "refused",
           4: "timeout", 5: "internalError"}
CLOSE_TYPES = {1: "none", 2: "read", 3: "write", 4: "all"}


# =============================================================================
# 1. Byte-level helpers
# =============================================================================

def frame(payload: bytes) -> bytes:
    """One whole frame: little-endian length that counts itself, then the payload."""
    return struct.pack("<I", 4 + len(payload)) + payload


def counter(n: int) -> bytes:
    """n bytes whose i-th byte is i % 256 (the {"counter": n} of the meaning schema)."""
    return bytes(i % 256 for i in range(n))


def pattern(n: int, seed: int) -> bytes:
    """n deterministic bytes that are not a counter (a small LCG)."""
    out = bytearray()
    x = seed & 0xFFFFFFFF
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


def hexm(b: bytes) -> dict:
    return {"hex": b.hex()}


def counterm(n: int) -> dict:
    return {"counter": n}


class BigInt:
    """An integer plistlib refuses to write (>= 2**64, or < -2**63).

    It is written as a 16-byte integer object (marker 0x14): the writer puts a
    unique placeholder in [2**63, 2**64) through plistlib and then replaces its
    16 bytes with the real two's-complement value. Offsets do not move.
    """

    def __init__(self, value: int):
        self.value = value


def _replace_bigints(value, placeholders):
    if isinstance(value, BigInt):
        ph = 2**63 + 0x5EED_0000 + len(placeholders)
        placeholders.append((ph, value.value))
        return ph
    if isinstance(value, dict):
        return {k: _replace_bigints(v, placeholders) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_bigints(v, placeholders) for v in value]
    return value


def plain(value):
    """The value a reader gets back: BigInt replaced by its int."""
    if isinstance(value, BigInt):
        return value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def bplist(value, sort_keys: bool = True) -> bytes:
    """A binary property list written by Python's plistlib (plus BigInt patching)."""
    placeholders: list = []
    v = _replace_bigints(value, placeholders)
    out = plistlib.dumps(v, fmt=plistlib.FMT_BINARY, sort_keys=sort_keys)
    for ph, real in placeholders:
        old = b"\x14" + ph.to_bytes(16, "big", signed=True)
        new = b"\x14" + real.to_bytes(16, "big", signed=True)
        assert out.count(old) == 1, "placeholder must occur exactly once"
        out = out.replace(old, new)
    return out


def xmlplist(value, sort_keys: bool = True) -> bytes:
    return plistlib.dumps(value, fmt=plistlib.FMT_XML, sort_keys=sort_keys)


def trailer(payload: bytes) -> dict:
    """The 32-byte trailer of a bplist00 document, decoded."""
    off, ref, num, top, table = struct.unpack(">6xBBQQQ", payload[-32:])
    return {"offsetSize": off, "refSize": ref, "objects": num, "top": top, "tableOffset": table}


# ---- a tiny hand assembler for broken binary property lists -----------------
# Objects are given as raw bytes; the assembler lays them out after the magic,
# writes the offset table and the trailer. Keyword overrides break one thing.

def bp_int(v: int) -> bytes:
    if v < 0:
        return b"\x13" + struct.pack(">q", v)
    if v < 1 << 8:
        return b"\x10" + struct.pack(">B", v)
    if v < 1 << 16:
        return b"\x11" + struct.pack(">H", v)
    if v < 1 << 32:
        return b"\x12" + struct.pack(">I", v)
    if v < 1 << 63:
        return b"\x13" + struct.pack(">Q", v)
    return b"\x14" + v.to_bytes(16, "big", signed=True)


def bp_head(high: int, count: int) -> bytes:
    if count < 15:
        return bytes([high << 4 | count])
    return bytes([high << 4 | 0xF]) + bp_int(count)


def bp_ascii(s: str) -> bytes:
    return bp_head(0x5, len(s)) + s.encode("ascii")


def bp_data(b: bytes) -> bytes:
    return bp_head(0x4, len(b)) + b


def bp_refs(refs, ref_size: int) -> bytes:
    return b"".join(r.to_bytes(ref_size, "big") for r in refs)


def bp_array(refs, ref_size: int = 1) -> bytes:
    return bp_head(0xA, len(refs)) + bp_refs(refs, ref_size)


def bp_dict(key_refs, value_refs, ref_size: int = 1) -> bytes:
    return bp_head(0xD, len(key_refs)) + bp_refs(key_refs, ref_size) + bp_refs(value_refs, ref_size)


def assemble(objects: list, *, top: int = 0, ref_size: int = 1, offset_size: Optional[int] = None,
             offsets: Optional[list] = None, num_objects: Optional[int] = None,
             top_override: Optional[int] = None, table_offset: Optional[int] = None,
             offset_size_override: Optional[int] = None, ref_size_override: Optional[int] = None) -> bytes:
    body = bytearray(b"bplist00")
    real_offsets = []
    for obj in objects:
        real_offsets.append(len(body))
        body += obj
    offs = list(offsets) if offsets is not None else real_offsets
    table = len(body)
    if offset_size is None:
        biggest = max(offs + [table])
        offset_size = 1 if biggest < 1 << 8 else 2 if biggest < 1 << 16 else 4
    for o in offs:
        body += o.to_bytes(offset_size, "big")
    body += struct.pack(
        ">6xBBQQQ",
        offset_size if offset_size_override is None else offset_size_override,
        ref_size if ref_size_override is None else ref_size_override,
        len(objects) if num_objects is None else num_objects,
        top if top_override is None else top_override,
        table if table_offset is None else table_offset,
    )
    return bytes(body)


def object_offsets(objects: list) -> list:
    offs, pos = [], 8
    for obj in objects:
        offs.append(pos)
        pos += len(obj)
    return offs


def table_start(objects: list) -> int:
    return 8 + sum(len(o) for o in objects)


def patched_offsets(objects: list, index: int, value: int) -> list:
    offs = object_offsets(objects)
    offs[index] = value
    return offs


def flat_dict_objects(pairs: list) -> list:
    """Objects of a one-level dict: 0 = the dict, then the keys, then the values.

    pairs: [(key, encoded_value_bytes), ...]. Reference size 1.
    """
    n = len(pairs)
    objs = [bp_dict(list(range(1, n + 1)), list(range(n + 1, 2 * n + 1)))]
    objs += [bp_ascii(k) for k, _ in pairs]
    objs += [v for _, v in pairs]
    return objs


# ---- packets -----------------------------------------------------------------

def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_udp(total: int, seq: int, proto: int = 17) -> bytes:
    """An IPv4 packet of `total` bytes: 10.8.0.2 -> 198.51.100.7, UDP 40000 -> 9, filler payload."""
    src, dst = bytes([10, 8, 0, 2]), bytes([198, 51, 100, 7])
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, seq & 0xFFFF, 0x4000, 64, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", _checksum(hdr)) + hdr[12:]
    body_len = total - 20
    udp = struct.pack(">HHHH", 40000, 9, body_len, 0) + pattern(body_len - 8, seq)
    return hdr + udp


def ipv6_udp(total: int, seq: int) -> bytes:
    """An IPv6 packet of `total` bytes: 2001:db8::2 -> 2001:db8::7, UDP 40000 -> 9, filler payload."""
    src = bytes.fromhex("20010db8000000000000000000000002")
    dst = bytes.fromhex("20010db8000000000000000000000007")
    body_len = total - 40
    hdr = struct.pack(">IHBB16s16s", 0x60000000 | (seq & 0xFFFFF), body_len, 17, 64, src, dst)
    udp = struct.pack(">HHHH", 40000, 9, body_len, 0) + pattern(body_len - 8, 1000 + seq)
    return hdr + udp


# ---- DNS ----------------------------------------------------------------------

def _qname(name: str) -> bytes:
    return b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"


DNS_QUERY = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + _qname("example.com") + struct.pack(">HH", 1, 1)
DNS_ANSWER = (struct.pack(">HHHHHH", 0x1234, 0x8180, 1, 1, 0, 0) + _qname("example.com") + struct.pack(">HH", 1, 1)
              + struct.pack(">HHHIH", 0xC00C, 1, 1, 300, 4) + bytes([192, 0, 2, 10]))

HTTP_REQUEST = b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"
HTTP_REPLY = b"HTTP/1.1 204 No Content\r\n\r\n"


# ---- configurations --------------------------------------------------------------

IP_CONFIG = {
    "IPv4": {
        "Address": "10.8.0.2",
        "Netmask": "255.255.255.255",
        "Routes": [
            {"Address": "10.8.0.0", "Netmask": "255.255.255.0"},
            {"Address": "192.168.50.0", "Netmask": "255.255.254.0"},
        ],
    },
    "DNS": {"Servers": ["10.8.0.1", "9.9.9.9"], "SearchDomains": ["corp.example", "example"]},
}

BIG_ROUTES = 140  # enough distinct objects (> 255) that plistlib needs 2-byte object references
BIG_CONFIG = {
    "IPv4": {
        "Address": "10.8.0.77",
        "Netmask": "255.255.255.255",
        "Routes": [{"Address": f"10.{i}.0.0", "Netmask": "255.255.0.0"} for i in range(1, BIG_ROUTES + 1)],
    },
    "DNS": {"Servers": ["10.8.0.1"], "SearchDomains": ["corp.example"]},
}

FETCH_CONFIG = {  # what fetchConfiguration returns: no IPv4 (A5)
    "DNS": {"Servers": ["10.8.0.1", "2001:db8::53"], "SearchDomains": ["corp.example"]},
    "Proxies": {
        "HTTPEnable": 1,
        "HTTPProxy": "proxy.corp.example",
        "HTTPPort": 3128,
        "ExcludeSimpleHostnames": True,
        "ExceptionsList": ["*.local", "169.254/16"],
    },
    # A key the sample does not know, passed through: exercises real, data and false.
    "Example-Extension": {"Weight": 1.5, "Blob": bytes([0, 1, 0xFE, 0xFF]), "Enabled": False},
}


def typed(value) -> dict:
    """A property-list value as the typed JSON of the meaning schema (PLIST)."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"integer": value}
    if isinstance(value, float):
        return {"real": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, (bytes, bytearray)):
        return {"data": hexm(bytes(value))}
    if isinstance(value, list):
        return {"array": [typed(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {k: typed(v) for k, v in value.items()}}
    raise TypeError(f"no typed JSON for {type(value)}")


# =============================================================================
# 2. Valid fixtures
# =============================================================================

@dataclass
class Valid:
    name: str
    description: str
    sender: str                       # "client" | "server"
    plist: Any                        # what the writer is given
    message: dict                     # the decoded meaning
    fmt: str = "binary"               # "binary" (plistlib) | "xml" (plistlib) | "cf" (CoreFoundation)
    sort_keys: bool = True            # plistlib's key order: sorted, or the dict's own order
    check: Optional[Callable[[bytes], None]] = None  # extra assertion on the payload bytes


def expect_bytes(*needles: bytes):
    def check(payload: bytes):
        for n in needles:
            assert n in payload, f"payload lacks {n.hex()}"
    return check


def expect_trailer(**want):
    def check(payload: bytes):
        t = trailer(payload)
        for k, v in want.items():
            assert t[k] == v, f"trailer {k} = {t[k]}, want {v}"
    return check


def checks(*fs):
    def check(payload: bytes):
        for f in fs:
            f(payload)
    return check


def M(command: str, identifier: int, **fields) -> dict:
    m = {"command": command, "identifier": identifier}
    m.update(fields)
    return m


def W(command: str, identifier: int, **keys) -> dict:
    """A wire dict: command number, identifier, then the keys (Python names use _ for -)."""
    d = {"command": CMD[command], "identifier": identifier}
    for k, v in keys.items():
        d[k.replace("_", "-")] = v
    return d


def _max_frame_data_len() -> int:
    n = MAX_FRAME - 100
    while True:
        size = len(frame(bplist(W("data", 77, data=counter(n)))))
        if size == MAX_FRAME:
            return n
        n += MAX_FRAME - size


MAX_DATA = _max_frame_data_len()
PACKETS_32 = [ipv4_udp(1400, i) if i % 2 == 0 else ipv6_udp(1400, i) for i in range(32)]
PROTOCOLS_32 = [2 if i % 2 == 0 else 30 for i in range(32)]
HOST_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
assert len(HOST_253) == 253

VALID: list[Valid] = [
    # ---- data (1) -------------------------------------------------------------
    Valid("data-tcp-client", "TCP stream bytes from the client (an HTTP request).", "client",
          W("data", 1, data=HTTP_REQUEST), M("data", 1, data=hexm(HTTP_REQUEST))),
    Valid("data-tcp-server", "TCP stream bytes from the server (an HTTP reply).", "server",
          W("data", 1, data=HTTP_REPLY), M("data", 1, data=hexm(HTTP_REPLY))),
    Valid("data-length-0", "Data message with an empty data object (marker 0x40).", "client",
          W("data", 2, data=b""), M("data", 2, data=hexm(b""))),
    Valid("data-length-1", "Data message with 1 byte of data.", "server",
          W("data", 2, data=b"\x7f"), M("data", 2, data=hexm(b"\x7f"))),
    Valid("data-length-14", "Data of 14 bytes: the largest length held in the marker nibble.", "client",
          W("data", 2, data=pattern(14, 14)), M("data", 2, data=hexm(pattern(14, 14))),
          check=expect_bytes(b"\x4e" + pattern(14, 14))),
    Valid("data-length-15", "Data of 15 bytes: marker 0x4F followed by an integer object holding the length.", "client",
          W("data", 2, data=pattern(15, 15)), M("data", 2, data=hexm(pattern(15, 15))),
          check=expect_bytes(b"\x4f\x10\x0f" + pattern(15, 15))),
    Valid("data-length-16", "Data of 16 bytes (extended length).", "server",
          W("data", 2, data=pattern(16, 16)), M("data", 2, data=hexm(pattern(16, 16))),
          check=expect_bytes(b"\x4f\x10\x10")),
    Valid("data-length-16384", "Data of 16384 bytes: a 2-byte length integer and 2-byte offsets.", "server",
          W("data", 3, data=counter(16384)), M("data", 3, data=counterm(16384)),
          check=checks(expect_bytes(b"\x4f\x11\x40\x00"), expect_trailer(offsetSize=2))),
    Valid("data-length-70000", "Data of 70000 bytes: a 4-byte length integer, so plistlib uses 4-byte offsets.", "client",
          W("data", 3, data=counter(70000)), M("data", 3, data=counterm(70000)),
          check=checks(expect_bytes(b"\x4f\x12\x00\x01\x11\x70"), expect_trailer(offsetSize=4))),
    Valid("data-max-frame", f"Data of {MAX_DATA} bytes, making the frame exactly {MAX_FRAME} bytes long: the largest legal frame.", "server",
          W("data", 77, data=counter(MAX_DATA)), M("data", 77, data=counterm(MAX_DATA))),
    Valid("data-udp-client-port-integer", "UDP datagram from the client with its destination; port is an integer, the canonical form (A2).", "client",
          W("data", 40, data=DNS_QUERY, host="198.51.100.53", port=53),
          M("data", 40, data=hexm(DNS_QUERY), host="198.51.100.53", port=53)),
    Valid("data-udp-client-port-string", "UDP datagram whose port is the string \"5353\" (tolerated, no Apple peer sends it); decodes to 5353.", "client",
          W("data", 41, data=b"\x00\x00\x00\x00", host="203.0.113.9", port="5353"),
          M("data", 41, data=hexm(b"\x00\x00\x00\x00"), host="203.0.113.9", port=5353)),
    Valid("data-udp-server-reply", "UDP datagram from the server with its source address and integer port.", "server",
          W("data", 40, data=DNS_ANSWER, host="198.51.100.53", port=53),
          M("data", 40, data=hexm(DNS_ANSWER), host="198.51.100.53", port=53)),
    Valid("data-udp-server-ipv6-source", "UDP datagram from the server whose source is an IPv6 literal.", "server",
          W("data", 42, data=b"\x1b\x00", host="2001:db8::123", port=123),
          M("data", 42, data=hexm(b"\x1b\x00"), host="2001:db8::123", port=123)),
    Valid("data-extra-key", "Data message with keys nobody knows (a string and a nested dict); they are ignored.", "client",
          W("data", 5, data=b"hi", x_vendor_note="ignore me", x_vendor_blob={"a": [1, 2.5, True]}),
          M("data", 5, data=hexm(b"hi"))),

    # ---- identifiers: sign and integer widths -------------------------------------
    Valid("identifier-1-byte-200", "Identifier 200 is a 1-byte integer object (0x10 0xC8): it must be read unsigned.", "client",
          W("suspend", 200), M("suspend", 200), check=expect_bytes(b"\x10\xc8")),
    Valid("identifier-2-byte-60000", "Identifier 60000 is a 2-byte integer object (0x11): read unsigned.", "server",
          W("resume", 60000), M("resume", 60000), check=expect_bytes(b"\x11\xea\x60")),
    Valid("identifier-4-byte-4000000000", "Identifier 4000000000 is a 4-byte integer object (0x12): read unsigned.", "client",
          W("close", 4000000000, close_type=4), M("close", 4000000000, direction="all"),
          check=expect_bytes(b"\x12\xee\x6b\x28\x00")),
    Valid("identifier-8-byte-minus-5", "Identifier -5 is an 8-byte signed integer object (0x13).", "client",
          W("data", -5, data=b"x"), M("data", -5, data=hexm(b"x")),
          check=expect_bytes(b"\x13\xff\xff\xff\xff\xff\xff\xff\xfb")),
    Valid("identifier-minus-1", "Identifier -1 (Apple's app proxy uses hashes, which can be negative).", "server",
          W("data", -1, data=b"neg"), M("data", -1, data=hexm(b"neg"))),
    Valid("identifier-int64-min", "Identifier -9223372036854775808, the smallest signed 64-bit value.", "client",
          W("close", INT64_MIN, close_type=3), M("close", INT64_MIN, direction="write")),
    Valid("identifier-int64-max", "Identifier 9223372036854775807, the largest signed 64-bit value (8-byte object).", "client",
          W("open", INT64_MAX, tunnel_type=0, app_proxy_flow_type=1, host="example.com", port=80),
          M("open", INT64_MAX, tunnelType="app", flowKind="tcp", host="example.com", port=80),
          check=expect_bytes(b"\x13\x7f\xff\xff\xff\xff\xff\xff\xff")),

    # ---- suspend (2), resume (3) ----------------------------------------------------
    Valid("suspend-client", "Client asks the server to stop sending data for flow 7.", "client",
          W("suspend", 7), M("suspend", 7)),
    Valid("suspend-server", "Server asks the client to stop sending data for flow 7.", "server",
          W("suspend", 7), M("suspend", 7)),
    Valid("resume-client", "Client lets the server send data for flow 7 again.", "client",
          W("resume", 7), M("resume", 7)),
    Valid("resume-server", "Server lets the client send data for flow 7 again.", "server",
          W("resume", 7), M("resume", 7)),

    # ---- close (4) ------------------------------------------------------------------
    Valid("close-none", "Close with close-type 1 (none): changes nothing.", "client",
          W("close", 8, close_type=1), M("close", 8, direction="none")),
    Valid("close-read", "Close with close-type 2 (read).", "server",
          W("close", 8, close_type=2), M("close", 8, direction="read")),
    Valid("close-write", "Close with close-type 3 (write): a half-close, the sender's stream ended.", "client",
          W("close", 8, close_type=3), M("close", 8, direction="write")),
    Valid("close-all", "Close with close-type 4 (all).", "server",
          W("close", 8, close_type=4), M("close", 8, direction="all")),
    Valid("close-no-type-client", "Close without close-type from the client: decodes to all.", "client",
          W("close", 9), M("close", 9, direction="all")),
    Valid("close-no-type-server", "Close without close-type from the server: decodes to all.", "server",
          W("close", 9), M("close", 9, direction="all")),

    # ---- dns (5) --------------------------------------------------------------------
    Valid("dns-query-client", "DNS query (example.com A) from the client, no source.", "client",
          W("dns", 11, dns_packet=DNS_QUERY), M("dns", 11, dnsPacket=hexm(DNS_QUERY))),
    Valid("dns-answer-server", "DNS answer from the server with the resolver's address:port.", "server",
          W("dns", 11, dns_packet=DNS_ANSWER, dns_packet_source="10.8.0.1:53"),
          M("dns", 11, dnsPacket=hexm(DNS_ANSWER), dnsPacketSource="10.8.0.1:53")),

    # ---- open (6) -------------------------------------------------------------------
    Valid("open-tcp-port-string", "TCP open whose port is the string \"443\": no Apple peer sends it; our server tolerates it.", "client",
          W("open", 21, tunnel_type=0, app_proxy_flow_type=1, host="www.example.com", port="443"),
          M("open", 21, tunnelType="app", flowKind="tcp", host="www.example.com", port=443)),
    Valid("open-tcp-port-integer", "TCP open as Apple's client sends it (the canonical form): port is the integer 443.", "client",
          W("open", 22, tunnel_type=0, app_proxy_flow_type=1, host="www.example.com", port=443),
          M("open", 22, tunnelType="app", flowKind="tcp", host="www.example.com", port=443)),
    Valid("open-tcp-port-leading-zero", "Port \"08080\" is five ASCII digits with value 8080 (A6 allows 1-5 digits).", "client",
          W("open", 23, tunnel_type=0, app_proxy_flow_type=1, host="192.0.2.80", port="08080"),
          M("open", 23, tunnelType="app", flowKind="tcp", host="192.0.2.80", port=8080)),
    Valid("open-tcp-port-1", "Port 1, the smallest legal port.", "client",
          W("open", 24, tunnel_type=0, app_proxy_flow_type=1, host="192.0.2.1", port=1),
          M("open", 24, tunnelType="app", flowKind="tcp", host="192.0.2.1", port=1)),
    Valid("open-tcp-port-65535", "Port 65535 (integer), the largest legal port.", "client",
          W("open", 25, tunnel_type=0, app_proxy_flow_type=1, host="192.0.2.1", port=65535),
          M("open", 25, tunnelType="app", flowKind="tcp", host="192.0.2.1", port=65535)),
    Valid("open-tcp-port-string-65535", "Port \"65535\", the largest legal port as a string (tolerated form).", "client",
          W("open", 26, tunnel_type=0, app_proxy_flow_type=1, host="192.0.2.1", port="65535"),
          M("open", 26, tunnelType="app", flowKind="tcp", host="192.0.2.1", port=65535)),
    Valid("open-tcp-utf16-host", "TCP open to \"bücher.example\": plistlib writes a non-ASCII string as UTF-16 (marker 0x6_).", "client",
          W("open", 27, tunnel_type=0, app_proxy_flow_type=1, host="bücher.example", port=443),
          M("open", 27, tunnelType="app", flowKind="tcp", host="bücher.example", port=443),
          check=expect_bytes(b"\x6e" + "bücher.example".encode("utf-16be"))),
    Valid("open-tcp-host-253", "TCP open whose host is 253 bytes long, the longest allowed (A6).", "client",
          W("open", 28, tunnel_type=0, app_proxy_flow_type=1, host=HOST_253, port=443),
          M("open", 28, tunnelType="app", flowKind="tcp", host=HOST_253, port=443)),
    Valid("open-tcp-ipv6-host", "TCP open to an IPv6 literal.", "client",
          W("open", 29, tunnel_type=0, app_proxy_flow_type=1, host="2001:db8::1", port=22),
          M("open", 29, tunnelType="app", flowKind="tcp", host="2001:db8::1", port=22)),
    Valid("open-udp", "UDP open (app-proxy-flow-type 3): no host, no port.", "client",
          W("open", 30, tunnel_type=0, app_proxy_flow_type=3), M("open", 30, tunnelType="app", flowKind="udp")),
    Valid("open-ip", "IP-layer open (tunnel-type 1): nothing else.", "client",
          W("open", 31, tunnel_type=1), M("open", 31, tunnelType="ip")),
    Valid("open-key-order-reversed", "TCP open whose dict keys are written in reverse order (port first, command last).", "client",
          {"port": 443, "host": "www.example.com", "app-proxy-flow-type": 1, "tunnel-type": 0,
           "identifier": 32, "command": 6},
          M("open", 32, tunnelType="app", flowKind="tcp", host="www.example.com", port=443), sort_keys=False),
    Valid("data-key-order-command-first", "UDP data with keys in writing order command, identifier, port, host, data (not sorted).", "server",
          {"command": 1, "identifier": 33, "port": 53, "host": "198.51.100.53", "data": b"\x01\x02"},
          M("data", 33, data=hexm(b"\x01\x02"), host="198.51.100.53", port=53), sort_keys=False),

    # ---- openResult (7) -------------------------------------------------------------
    Valid("openresult-success", "TCP open succeeded (result-code 0), no configuration.", "server",
          W("openResult", 21, result_code=0), M("openResult", 21, result="success")),
    Valid("openresult-invalid-parameter", "Open failed: result-code 1 (invalid parameter).", "server",
          W("openResult", 21, result_code=1), M("openResult", 21, result="invalidParameter")),
    Valid("openresult-no-such-host", "Open failed: result-code 2 (no such host).", "server",
          W("openResult", 21, result_code=2), M("openResult", 21, result="noSuchHost")),
    Valid("openresult-refused", "Open failed: result-code 3 (refused).", "server",
          W("openResult", 21, result_code=3), M("openResult", 21, result="refused")),
    Valid("openresult-timeout", "Open failed: result-code 4 (timeout).", "server",
          W("openResult", 21, result_code=4), M("openResult", 21, result="timeout")),
    Valid("openresult-internal-error", "Open failed: result-code 5 (internal error).", "server",
          W("openResult", 21, result_code=5), M("openResult", 21, result="internalError")),
    Valid("openresult-ip-configuration", "IP open succeeded with a configuration: IPv4 Address/Netmask/Routes and DNS Servers/SearchDomains.", "server",
          W("openResult", 31, result_code=0, configuration=IP_CONFIG),
          M("openResult", 31, result="success", configuration=typed(IP_CONFIG))),
    Valid("openresult-ip-configuration-140-routes", f"IP configuration with {BIG_ROUTES} routes: more than 255 objects, so object references are 2 bytes.", "server",
          W("openResult", 34, result_code=0, configuration=BIG_CONFIG),
          M("openResult", 34, result="success", configuration=typed(BIG_CONFIG)),
          check=expect_trailer(refSize=2)),

    # ---- packets (8) ----------------------------------------------------------------
    Valid("packets-one-ipv4-client", "One IPv4 packet from the client, protocol 2.", "client",
          W("packets", 31, packets=[ipv4_udp(60, 1)], protocols=[2]),
          M("packets", 31, packets=[hexm(ipv4_udp(60, 1))], protocols=[2])),
    Valid("packets-one-ipv6-server", "One IPv6 packet from the server, protocol 30 (Darwin's AF_INET6).", "server",
          W("packets", 31, packets=[ipv6_udp(80, 2)], protocols=[30]),
          M("packets", 31, packets=[hexm(ipv6_udp(80, 2))], protocols=[30])),
    Valid("packets-32-server", "32 packets of 1400 bytes from the server, alternating IPv4 (2) and IPv6 (30).", "server",
          W("packets", 31, packets=PACKETS_32, protocols=PROTOCOLS_32),
          M("packets", 31, packets=[hexm(p) for p in PACKETS_32], protocols=PROTOCOLS_32)),
    Valid("packets-32-client", "32 packets of 1400 bytes from the client, alternating IPv4 (2) and IPv6 (30).", "client",
          W("packets", 31, packets=PACKETS_32, protocols=PROTOCOLS_32),
          M("packets", 31, packets=[hexm(p) for p in PACKETS_32], protocols=PROTOCOLS_32)),
    Valid("packets-unknown-protocol", "An IPv4 packet labelled with protocol 99: not an error, the version nibble decides.", "client",
          W("packets", 31, packets=[ipv4_udp(48, 3), ipv6_udp(64, 4)], protocols=[99, 30]),
          M("packets", 31, packets=[hexm(ipv4_udp(48, 3)), hexm(ipv6_udp(64, 4))], protocols=[99, 30])),

    # ---- fetchConfiguration (9) -------------------------------------------------------
    Valid("fetchconfiguration-request", "The client's configuration request: identifier 0, nothing else.", "client",
          W("fetchConfiguration", 0), M("fetchConfiguration", 0)),
    Valid("fetchconfiguration-reply", "The server's reply: a configuration without IPv4 (DNS, Proxies and a passed-through extension with real, data and bool values).", "server",
          W("fetchConfiguration", 0, configuration=FETCH_CONFIG),
          M("fetchConfiguration", 0, configuration=typed(FETCH_CONFIG))),

    # ---- authenticate (10), authenticateResult (11) -------------------------------------
    Valid("authenticate", "Login and password (ASCII), identifier 0.", "client",
          W("authenticate", 0, login="alice", password="correct horse battery staple"),
          M("authenticate", 0, login="alice", password="correct horse battery staple")),
    Valid("authenticate-utf16", "Login with an emoji (UTF-16 with a surrogate pair) and a non-ASCII password.", "client",
          W("authenticate", 0, login="zoë🦊", password="pässwörd"),
          M("authenticate", 0, login="zoë🦊", password="pässwörd"),
          check=expect_bytes(b"\x65" + "zoë🦊".encode("utf-16be"))),
    Valid("authenticateresult-success", "Authentication accepted (result-code 0).", "server",
          W("authenticateResult", 0, result_code=0), M("authenticateResult", 0, result="success")),
    Valid("authenticateresult-refused", "Authentication refused (result-code 3).", "server",
          W("authenticateResult", 0, result_code=3), M("authenticateResult", 0, result="refused")),

    # ---- XML payloads (readers accept XML too) -----------------------------------------
    Valid("xml-open-tcp", "TCP open whose payload is an XML property list instead of bplist00.", "client",
          W("open", 50, tunnel_type=0, app_proxy_flow_type=1, host="www.example.com", port=443),
          M("open", 50, tunnelType="app", flowKind="tcp", host="www.example.com", port=443), fmt="xml"),
    Valid("xml-data-negative-identifier", "XML payload: data (base64 in <data>) for identifier -42.", "server",
          W("data", -42, data=HTTP_REPLY), M("data", -42, data=hexm(HTTP_REPLY)), fmt="xml"),

    # ---- written by CoreFoundation (generate-cf.swift) ------------------------------------
    Valid("cf-open-tcp", "TCP open whose port is the tolerated string \"443\", written by CoreFoundation.", "client",
          W("open", 60, tunnel_type=0, app_proxy_flow_type=1, host="www.example.com", port="443"),
          M("open", 60, tunnelType="app", flowKind="tcp", host="www.example.com", port=443), fmt="cf"),
    Valid("cf-open-utf16-host", "TCP open to \"bücher.example\" with integer port, written by CoreFoundation.", "client",
          W("open", 61, tunnel_type=0, app_proxy_flow_type=1, host="bücher.example", port=8443),
          M("open", 61, tunnelType="app", flowKind="tcp", host="bücher.example", port=8443), fmt="cf"),
    Valid("cf-data-udp", "UDP data with integer port and identifier -7, written by CoreFoundation.", "server",
          W("data", -7, data=DNS_ANSWER, host="198.51.100.53", port=53),
          M("data", -7, data=hexm(DNS_ANSWER), host="198.51.100.53", port=53), fmt="cf"),
    Valid("cf-data-70000", "70000 bytes of data, written by CoreFoundation.", "client",
          W("data", 4000000000, data=counter(70000)), M("data", 4000000000, data=counterm(70000)), fmt="cf"),
    Valid("cf-close-write", "Close type 3 for identifier 60000, written by CoreFoundation.", "server",
          W("close", 60000, close_type=3), M("close", 60000, direction="write"), fmt="cf"),
    Valid("cf-openresult-ip-configuration", f"IP configuration with {BIG_ROUTES} routes, written by CoreFoundation.", "server",
          W("openResult", 62, result_code=0, configuration=BIG_CONFIG),
          M("openResult", 62, result="success", configuration=typed(BIG_CONFIG)), fmt="cf"),
    Valid("cf-fetchconfiguration-reply", "fetchConfiguration reply (real, data, bool inside), written by CoreFoundation.", "server",
          W("fetchConfiguration", 0, configuration=FETCH_CONFIG),
          M("fetchConfiguration", 0, configuration=typed(FETCH_CONFIG)), fmt="cf"),
    Valid("cf-packets", "Two packets with protocols 2 and 30, written by CoreFoundation.", "client",
          W("packets", 63, packets=[ipv4_udp(60, 5), ipv6_udp(80, 6)], protocols=[2, 30]),
          M("packets", 63, packets=[hexm(ipv4_udp(60, 5)), hexm(ipv6_udp(80, 6))], protocols=[2, 30]), fmt="cf"),
    Valid("cf-authenticate-utf16", "authenticate with an emoji login, written by CoreFoundation.", "client",
          W("authenticate", 0, login="zoë🦊", password="pässwörd"),
          M("authenticate", 0, login="zoë🦊", password="pässwörd"), fmt="cf"),
    Valid("cf-identifier-int64-min", "Suspend for identifier -9223372036854775808, written by CoreFoundation.", "client",
          W("suspend", INT64_MIN), M("suspend", INT64_MIN), fmt="cf"),
]


# =============================================================================
# 3. Invalid fixtures
# =============================================================================

@dataclass
class Invalid:
    name: str
    description: str
    sender: str
    error: dict
    content: bytes                     # the whole file: usually one frame, maybe broken
    baseline: Optional[bytes] = None   # for hand-broken bplists: the same document unbroken (must decode)
    plistlib_lenient: Optional[str] = None  # why plistlib itself accepts this payload (check skipped)


def E(kind: str, disposition: str, key: Optional[str] = None, identifier: Optional[int] = None) -> dict:
    e = {"kind": kind, "disposition": disposition}
    if key is not None:
        e["key"] = key
    if identifier is not None:
        e["identifier"] = identifier
    return e


def bad_msg(name, description, sender, plist, error, fmt="binary", sort_keys=True) -> Invalid:
    payload = xmlplist(plist, sort_keys) if fmt == "xml" else bplist(plist, sort_keys)
    return Invalid(name, description, sender, error, frame(payload))


def bad_payload(name, description, payload, baseline=None, lenient=None, sender="client") -> Invalid:
    return Invalid(name, description, sender, E("plist.invalid", CLOSE), frame(payload),
                   baseline=baseline, plistlib_lenient=lenient)


def tcp_open(identifier, **keys):
    """A TCP open; keys given as None are left out."""
    d = W("open", identifier, tunnel_type=0, app_proxy_flow_type=1, host="www.example.com", port="443")
    for k, v in keys.items():
        k = k.replace("_", "-")
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    return d


def without(d: dict, key: str) -> dict:
    d = dict(d)
    del d[key]
    return d


# Building blocks for the hand-broken binary property lists: a suspend message
# {command: 2, identifier: 9} and a data message {command: 1, data: "hello", identifier: 9}.
SUSPEND_OBJS = flat_dict_objects([("command", bp_int(2)), ("identifier", bp_int(9))])
DATA_OBJS = flat_dict_objects([("command", bp_int(1)), ("data", bp_data(b"hello")), ("identifier", bp_int(9))])
# Objects of DATA_OBJS: 0 dict, 1 "command", 2 "data", 3 "identifier", 4 int 1, 5 data, 6 int 9.


def _cycle_objects():
    # 0: {command: 1, identifier: 9, data: "hello", x: [ <ref 0> ]}; 8: the array pointing back at the dict.
    objs = [bp_dict([1, 2, 3, 4], [5, 6, 7, 8])]
    objs += [bp_ascii(k) for k in ("command", "data", "identifier", "x")]
    objs += [bp_int(1), bp_data(b"hello"), bp_int(9), bp_array([0])]
    return objs


def _cycle_baseline():
    objs = _cycle_objects()
    objs[8] = bp_array([])
    return assemble(objs)


def _deep_objects(depth: int):
    # 0: {command: 1, identifier: 9, data: "hello", x: A1}; A1 = [A2], ..., A(depth) = [].
    base = 9
    objs = [bp_dict([1, 2, 3, 4], [5, 6, 7, 8], 2)]
    objs += [bp_ascii(k) for k in ("command", "data", "identifier", "x")]
    objs += [bp_int(1), bp_data(b"hello"), bp_int(9)]
    for i in range(depth):
        objs.append(bp_array([base + i], 2) if i < depth - 1 else bp_array([], 2))
    return objs


DEPTH = 5000
GARBAGE = bytes([0x00, 0x9C, 0xF1]) + pattern(61, 0xBAD)
MSG = W("data", 9, data=b"hello")
MSG_BPLIST = bplist(MSG)
JSON_PAYLOAD = b'{"command": 2, "identifier": 9}'
XML_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
            b'"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n')
XML_UNTERMINATED = XML_HEAD + b"<dict>\n\t<key>command</key>\n\t<integer>2</integer>\n\t<key>identifier</key>\n\t<integer>9"
XML_BAD_INTEGER = XML_HEAD + b"<dict>\n\t<key>command</key>\n\t<integer>two</integer>\n\t<key>identifier</key>\n\t<integer>9</integer>\n</dict>\n</plist>\n"
XML_GOOD = XML_HEAD + b"<dict>\n\t<key>command</key>\n\t<integer>2</integer>\n\t<key>identifier</key>\n\t<integer>9</integer>\n</dict>\n</plist>\n"
BIGBE = struct.pack(">I", 4 + len(bplist(W("suspend", 9))))  # a length written big-endian

INVALID: list[Invalid] = [
    # ---- frame.* ---------------------------------------------------------------------
    Invalid("frame-length-0", "Length prefix 0.", "client", E("frame.lengthTooSmall", CLOSE),
            struct.pack("<I", 0)),
    Invalid("frame-length-4", "Length prefix 4: a frame with an empty payload.", "client", E("frame.lengthTooSmall", CLOSE),
            struct.pack("<I", 4)),
    Invalid("frame-length-3-then-bytes", "Length prefix 3 followed by bytes that look like a payload.", "server",
            E("frame.lengthTooSmall", CLOSE), struct.pack("<I", 3) + b"bplist00"),
    Invalid("frame-length-131073", "Length prefix 131073, one more than allowed; only 8 payload bytes follow: the header alone must be refused.",
            "client", E("frame.lengthTooLarge", CLOSE), struct.pack("<I", MAX_FRAME + 1) + b"bplist00"),
    Invalid("frame-length-max-uint32", "Length prefix 0xFFFFFFFF.", "server", E("frame.lengthTooLarge", CLOSE),
            struct.pack("<I", 0xFFFFFFFF) + b"bplist00"),
    Invalid("frame-length-big-endian", "A small frame whose length was written big-endian: read little-endian it is far too large.",
            "client", E("frame.lengthTooLarge", CLOSE), BIGBE + bplist(W("suspend", 9))),
    Invalid("frame-truncated-header-only", "Length prefix 100 and nothing else: the stream closed before the payload.",
            "client", E("frame.truncated", CLOSE), struct.pack("<I", 100)),
    Invalid("frame-truncated-last-byte", "A valid data frame missing its last byte.", "server",
            E("frame.truncated", CLOSE), frame(MSG_BPLIST)[:-1]),
    Invalid("frame-truncated-partial-header", "Only 3 bytes: the stream closed inside the length prefix.", "client",
            E("frame.truncated", CLOSE), b"\x20\x00\x00"),

    # ---- plist.invalid ----------------------------------------------------------------
    bad_payload("plist-garbage", "64 bytes of pseudo-random garbage (starting 00 9C F1).", GARBAGE),
    bad_payload("plist-one-zero-byte", "The smallest frame (length 5) whose payload is a single 0x00 byte.", b"\x00"),
    bad_payload("plist-json", "A JSON object instead of a property list.", JSON_PAYLOAD),
    bad_payload("plist-magic-only", "Just the 8-byte magic \"bplist00\".", b"bplist00"),
    bad_payload("plist-no-trailer", "Magic and objects of a valid document but no offset table or trailer.",
                MSG_BPLIST[: trailer(MSG_BPLIST)["tableOffset"]]),
    bad_payload("plist-truncated-half", "A valid bplist00 cut in half; the frame length matches the cut payload.",
                MSG_BPLIST[: len(MSG_BPLIST) // 2]),
    bad_payload("plist-trailing-bytes", "A valid bplist00 followed by three zero bytes, so the last 32 bytes are not the trailer.",
                MSG_BPLIST + b"\x00\x00\x00"),
    bad_payload("plist-trailer-offset-size-0", "Trailer says offsets are 0 bytes wide.",
                assemble(SUSPEND_OBJS, offset_size_override=0), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-trailer-ref-size-0", "Trailer says object references are 0 bytes wide.",
                assemble(SUSPEND_OBJS, ref_size_override=0), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-trailer-zero-objects", "Trailer says the document holds 0 objects.",
                assemble(SUSPEND_OBJS, num_objects=0), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-trailer-top-out-of-range", "Trailer's top object index equals the object count.",
                assemble(SUSPEND_OBJS, top_override=len(SUSPEND_OBJS)), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-trailer-table-beyond-end", "Trailer's offset-table offset points past the end of the document.",
                assemble(SUSPEND_OBJS, table_offset=0x1000), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-trailer-too-many-objects", "Trailer claims 200 objects, so the offset table would run through the trailer and past the end.",
                assemble(SUSPEND_OBJS, num_objects=200), baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-offset-past-end", "One entry of the offset table (2-byte offsets) points far past the end of the document.",
                assemble(SUSPEND_OBJS, offset_size=2, offsets=patched_offsets(SUSPEND_OBJS, 4, 0xFFF0)),
                baseline=assemble(SUSPEND_OBJS, offset_size=2)),
    bad_payload("plist-offset-into-header", "The offset of the value of \"command\" is 0: it points into the 8-byte magic.",
                assemble(SUSPEND_OBJS, offsets=patched_offsets(SUSPEND_OBJS, 3, 0)),
                baseline=assemble(SUSPEND_OBJS),
                lenient="plistlib reads whatever the offset points at: 'b' of the magic is a UTF-16 string marker"),
    bad_payload("plist-offset-into-table", "The offset of the value of \"identifier\" points into the offset table itself.",
                assemble(SUSPEND_OBJS, offsets=patched_offsets(SUSPEND_OBJS, 4, table_start(SUSPEND_OBJS) + 1)),
                baseline=assemble(SUSPEND_OBJS)),
    bad_payload("plist-ref-out-of-range", "The dict's value reference for \"identifier\" is 7 in a document of 7 objects.",
                assemble([bp_dict([1, 2, 3], [4, 5, 7])] + DATA_OBJS[1:]), baseline=assemble(DATA_OBJS)),
    bad_payload("plist-self-reference", "The top dict holds itself as the value of an extra key \"x\".",
                assemble([bp_dict([1, 2, 3, 4], [5, 6, 7, 0])] + [bp_ascii(k) for k in ("command", "data", "identifier", "x")]
                         + [bp_int(1), bp_data(b"hello"), bp_int(9)]),
                baseline=assemble([bp_dict([1, 2, 3, 4], [5, 6, 7, 6])] + [bp_ascii(k) for k in ("command", "data", "identifier", "x")]
                                  + [bp_int(1), bp_data(b"hello"), bp_int(9)]),
                lenient="plistlib builds a recursive dict instead of refusing the cycle"),
    bad_payload("plist-reference-cycle", "A cycle through two containers: top dict -> array under key \"x\" -> the top dict.",
                assemble(_cycle_objects()), baseline=_cycle_baseline(),
                lenient="plistlib builds a recursive structure instead of refusing the cycle"),
    bad_payload("plist-unknown-marker", "The value of \"data\" has marker 0x70, which no object type uses.",
                assemble(DATA_OBJS[:5] + [b"\x70hello"] + DATA_OBJS[6:]), baseline=assemble(DATA_OBJS)),
    bad_payload("plist-data-length-past-end", "The data object claims 65535 bytes but the document is far shorter.",
                assemble(DATA_OBJS[:5] + [b"\x4f\x11\xff\xffhello"] + DATA_OBJS[6:]), baseline=assemble(DATA_OBJS)),
    bad_payload("plist-string-length-huge", "The key \"data\" is an ASCII string whose length is 2**62 (must not be allocated).",
                assemble(DATA_OBJS[:2] + [b"\x5f\x13" + struct.pack(">Q", 2**62) + b"data"] + DATA_OBJS[3:]),
                baseline=assemble(DATA_OBJS)),
    bad_payload("plist-dict-count-huge", "The top dict claims 2**63-1 entries (must not be allocated).",
                assemble([b"\xdf\x13" + struct.pack(">Q", INT64_MAX) + bytes([1, 2, 3, 4, 5, 6])] + DATA_OBJS[1:]),
                baseline=assemble(DATA_OBJS)),
    bad_payload("plist-nesting-5000-deep", f"A data message whose extra key \"x\" holds arrays nested {DEPTH} deep: refused as too complex, never recursed into until the stack overflows.",
                assemble(_deep_objects(DEPTH), ref_size=2), baseline=assemble(_deep_objects(3), ref_size=2)),
    bad_payload("plist-xml-unterminated", "An XML property list that stops in the middle of the dict.", XML_UNTERMINATED,
                baseline=XML_GOOD),
    bad_payload("plist-xml-bad-integer", "An XML property list whose <integer> holds \"two\".", XML_BAD_INTEGER,
                baseline=XML_GOOD),

    # ---- message.notADictionary ----------------------------------------------------------
    bad_msg("top-array", "Top object is an array holding the usual keys and values.", "client",
            ["command", 1, "identifier", 9], E("message.notADictionary", CLOSE)),
    bad_msg("top-string", "Top object is a string.", "server", "hello", E("message.notADictionary", CLOSE)),
    bad_msg("top-integer", "Top object is the integer 1.", "client", 1, E("message.notADictionary", CLOSE)),
    bad_msg("top-data", "Top object is a data object.", "client", b"\x01\x02", E("message.notADictionary", CLOSE)),
    bad_msg("top-array-xml", "XML payload whose top object is an empty array.", "server", [],
            E("message.notADictionary", CLOSE), fmt="xml"),

    # ---- message.missingCommand ------------------------------------------------------------
    bad_msg("missing-command", "A dict with identifier and data but no command.", "client",
            {"identifier": 9, "data": b"hello"}, E("message.missingCommand", CLOSE, identifier=9)),
    bad_msg("missing-command-empty-dict", "An empty dict.", "server", {}, E("message.missingCommand", CLOSE)),

    # ---- message.commandNotInteger ------------------------------------------------------------
    bad_msg("command-bool-true", "command is the boolean true (0x09), not the integer 1.", "client",
            {"command": True, "identifier": 9}, E("message.commandNotInteger", CLOSE, identifier=9)),
    bad_msg("command-real-1", "command is the real 1.0.", "server",
            {"command": 1.0, "identifier": 9}, E("message.commandNotInteger", CLOSE, identifier=9)),
    bad_msg("command-string-1", "command is the string \"1\".", "client",
            {"command": "1", "identifier": 9, "data": b"x"}, E("message.commandNotInteger", CLOSE, identifier=9)),
    bad_msg("command-data", "command is a data object holding 0x01.", "client",
            {"command": b"\x01", "identifier": 9}, E("message.commandNotInteger", CLOSE, identifier=9)),
    bad_msg("command-bool-xml", "XML payload whose command is <true/>.", "client",
            {"command": True, "identifier": 9}, E("message.commandNotInteger", CLOSE, identifier=9), fmt="xml"),

    # ---- message.unknownCommand -------------------------------------------------------------------
    bad_msg("command-0", "Command 0.", "client", W("data", 9) | {"command": 0}, E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-12", "Command 12, one past the last known.", "server", {"command": 12, "identifier": 9},
            E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-minus-1", "Command -1.", "client", {"command": -1, "identifier": 9},
            E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-int64-min", "Command -9223372036854775808.", "client", {"command": INT64_MIN, "identifier": 9},
            E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-int64-max", "Command 9223372036854775807.", "server", {"command": INT64_MAX, "identifier": 9},
            E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-2-pow-63", "Command 2**63, which plistlib writes as a 16-byte integer.", "client",
            {"command": 2**63, "identifier": 9}, E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-2-pow-64", "Command 2**64 as a 16-byte integer (beyond what fits in 64 bits, signed or not).", "client",
            {"command": BigInt(2**64), "identifier": 9}, E("message.unknownCommand", IGNORE, identifier=9)),
    bad_msg("command-2-pow-64-plus-1", "Command 2**64+1 as a 16-byte integer: its low 64 bits are 1, a reader must not truncate it to data.", "client",
            {"command": BigInt(2**64 + 1), "identifier": 9, "data": b"x"}, E("message.unknownCommand", IGNORE, identifier=9)),

    # ---- message.missingIdentifier / identifierNotInteger / identifierOutOfRange -------------------
    bad_msg("missing-identifier-data", "Data without identifier.", "client",
            {"command": 1, "data": b"hello"}, E("message.missingIdentifier", DROP)),
    bad_msg("missing-identifier-open", "A TCP open without identifier: it cannot be answered, so it is dropped.", "client",
            without(tcp_open(0), "identifier"), E("message.missingIdentifier", DROP)),
    bad_msg("identifier-string", "identifier is the string \"1\".", "client",
            W("data", "1", data=b"hello"), E("message.identifierNotInteger", DROP)),
    bad_msg("identifier-real", "identifier is the real 1.0.", "server",
            W("suspend", 1.0), E("message.identifierNotInteger", DROP)),
    bad_msg("identifier-bool", "identifier is the boolean true.", "client",
            W("close", True, close_type=4), E("message.identifierNotInteger", DROP)),
    bad_msg("identifier-data", "identifier is a data object.", "client",
            W("resume", b"\x00\x00\x00\x01"), E("message.identifierNotInteger", DROP)),
    bad_msg("identifier-2-pow-63", "identifier 2**63 (16-byte integer): outside signed 64 bits.", "client",
            W("data", 2**63, data=b"hello"), E("message.identifierOutOfRange", DROP)),
    bad_msg("identifier-2-pow-64-minus-1", "identifier 2**64-1 (16-byte integer): outside signed 64 bits.", "server",
            W("data", 2**64 - 1, data=b"hello"), E("message.identifierOutOfRange", DROP)),
    bad_msg("identifier-2-pow-64", "identifier 2**64 (16-byte integer): its low 64 bits are 0, a reader must not truncate.", "client",
            W("suspend", BigInt(2**64)), E("message.identifierOutOfRange", DROP)),
    bad_msg("identifier-below-int64-min", "identifier -2**63-1 (16-byte integer): below signed 64 bits.", "client",
            W("suspend", BigInt(-(2**63) - 1)), E("message.identifierOutOfRange", DROP)),

    # ---- message.missingKey ------------------------------------------------------------------------
    bad_msg("missing-tunnel-type", "Open without tunnel-type.", "client",
            tcp_open(101, tunnel_type=None), E("message.missingKey", OPENFAIL, "tunnel-type", 101)),
    bad_msg("missing-flow-type", "App-layer open without app-proxy-flow-type.", "client",
            tcp_open(102, app_proxy_flow_type=None), E("message.missingKey", OPENFAIL, "app-proxy-flow-type", 102)),
    bad_msg("missing-host-tcp-open", "TCP open without host.", "client",
            tcp_open(103, host=None), E("message.missingKey", OPENFAIL, "host", 103)),
    bad_msg("missing-port-tcp-open", "TCP open without port.", "client",
            tcp_open(104, port=None), E("message.missingKey", OPENFAIL, "port", 104)),
    bad_msg("missing-data", "Data without data.", "server",
            W("data", 105), E("message.missingKey", DROP, "data", 105)),
    bad_msg("missing-data-udp", "UDP data with host and port but no data.", "client",
            W("data", 106, host="198.51.100.53", port=53), E("message.missingKey", DROP, "data", 106)),
    bad_msg("missing-dns-packet", "dns without dns-packet (only a source).", "server",
            W("dns", 107, dns_packet_source="10.8.0.1:53"), E("message.missingKey", DROP, "dns-packet", 107)),
    bad_msg("missing-protocols", "packets without protocols.", "client",
            W("packets", 108, packets=[ipv4_udp(40, 1)]), E("message.missingKey", DROP, "protocols", 108)),
    bad_msg("missing-packets", "packets without packets.", "server",
            W("packets", 109, protocols=[2]), E("message.missingKey", DROP, "packets", 109)),
    bad_msg("missing-login", "authenticate without login.", "client",
            W("authenticate", 0, password="secret"), E("message.missingKey", DROP, "login", 0)),
    bad_msg("missing-password", "authenticate without password.", "client",
            W("authenticate", 0, login="alice"), E("message.missingKey", DROP, "password", 0)),
    bad_msg("missing-result-code-openresult", "openResult without result-code.", "server",
            W("openResult", 110), E("message.missingKey", DROP, "result-code", 110)),
    bad_msg("missing-result-code-authenticateresult", "authenticateResult without result-code.", "server",
            W("authenticateResult", 0), E("message.missingKey", DROP, "result-code", 0)),

    # ---- message.wrongType ---------------------------------------------------------------------------
    bad_msg("open-port-data", "TCP open whose port is a data object.", "client",
            tcp_open(201, port=b"\x01\xbb"), E("message.wrongType", OPENFAIL, "port", 201)),
    bad_msg("open-port-real", "TCP open whose port is the real 443.0.", "client",
            tcp_open(202, port=443.0), E("message.wrongType", OPENFAIL, "port", 202)),
    bad_msg("open-port-bool", "TCP open whose port is the boolean true.", "client",
            tcp_open(203, port=True), E("message.wrongType", OPENFAIL, "port", 203)),
    bad_msg("open-host-integer", "TCP open whose host is an integer.", "client",
            tcp_open(204, host=3221225985), E("message.wrongType", OPENFAIL, "host", 204)),
    bad_msg("open-tunnel-type-string", "Open whose tunnel-type is the string \"0\".", "client",
            tcp_open(205, tunnel_type="0"), E("message.wrongType", OPENFAIL, "tunnel-type", 205)),
    bad_msg("open-flow-type-bool", "Open whose app-proxy-flow-type is the boolean true.", "client",
            tcp_open(206, app_proxy_flow_type=True), E("message.wrongType", OPENFAIL, "app-proxy-flow-type", 206)),
    bad_msg("data-data-string", "Data whose data is a string.", "client",
            W("data", 207, data="hello"), E("message.wrongType", DROP, "data", 207)),
    bad_msg("data-host-integer", "UDP data whose host is an integer.", "client",
            W("data", 208, data=b"x", host=3325256757, port=53), E("message.wrongType", DROP, "host", 208)),
    bad_msg("data-port-data", "UDP data whose port is a data object.", "server",
            W("data", 209, data=b"x", host="198.51.100.53", port=b"\x00\x35"), E("message.wrongType", DROP, "port", 209)),
    bad_msg("close-type-string", "Close whose close-type is the string \"4\".", "client",
            W("close", 210, close_type="4"), E("message.wrongType", DROP, "close-type", 210)),
    bad_msg("close-type-bool", "Close whose close-type is the boolean true.", "server",
            W("close", 211, close_type=True), E("message.wrongType", DROP, "close-type", 211)),
    bad_msg("dns-packet-string", "dns whose dns-packet is a string.", "client",
            W("dns", 212, dns_packet="example.com"), E("message.wrongType", DROP, "dns-packet", 212)),
    bad_msg("dns-source-integer", "dns answer whose dns-packet-source is an integer.", "server",
            W("dns", 213, dns_packet=DNS_ANSWER, dns_packet_source=53), E("message.wrongType", DROP, "dns-packet-source", 213)),
    bad_msg("packets-dict", "packets whose packets is a dict.", "client",
            W("packets", 214, packets={"0": ipv4_udp(40, 1)}, protocols=[2]), E("message.wrongType", DROP, "packets", 214)),
    bad_msg("packets-holds-string", "packets whose packets array holds a string.", "server",
            W("packets", 215, packets=[ipv4_udp(40, 1), "not a packet"], protocols=[2, 2]), E("message.wrongType", DROP, "packets", 215)),
    bad_msg("protocols-holds-string", "packets whose protocols array holds the string \"2\".", "client",
            W("packets", 216, packets=[ipv4_udp(40, 1)], protocols=["2"]), E("message.wrongType", DROP, "protocols", 216)),
    bad_msg("protocols-integer", "packets whose protocols is a bare integer, not an array.", "client",
            W("packets", 217, packets=[ipv4_udp(40, 1)], protocols=2), E("message.wrongType", DROP, "protocols", 217)),
    bad_msg("openresult-result-code-string", "openResult whose result-code is the string \"0\".", "server",
            W("openResult", 218, result_code="0"), E("message.wrongType", DROP, "result-code", 218)),
    bad_msg("openresult-configuration-array", "openResult whose configuration is an array.", "server",
            W("openResult", 219, result_code=0, configuration=["IPv4"]), E("message.wrongType", DROP, "configuration", 219)),
    bad_msg("fetchconfiguration-configuration-string", "fetchConfiguration reply whose configuration is a string.", "server",
            W("fetchConfiguration", 0, configuration="DNS"), E("message.wrongType", DROP, "configuration", 0)),
    bad_msg("authenticate-login-integer", "authenticate whose login is an integer.", "client",
            W("authenticate", 0, login=1000, password="secret"), E("message.wrongType", DROP, "login", 0)),
    bad_msg("authenticate-password-data", "authenticate whose password is a data object.", "client",
            W("authenticate", 0, login="alice", password=b"secret"), E("message.wrongType", DROP, "password", 0)),

    # ---- message.invalidValue --------------------------------------------------------------------------
    *[bad_msg(f"open-port-{slug}", f"TCP open with port {shown}: {why}.", "client",
              tcp_open(ident, port=value), E("message.invalidValue", OPENFAIL, "port", ident))
      for ident, slug, value, shown, why in [
          (301, "plus-sign", "+443", '"+443"', "a sign is not a digit"),
          (302, "leading-space", " 443", '" 443"', "spaces are not digits"),
          (303, "inner-space", "44 3", '"44 3"', "spaces are not digits"),
          (304, "trailing-newline", "443\n", '"443\\n"', "a newline is not a digit"),
          (305, "string-0", "0", '"0"', "0 is not a port"),
          (306, "string-00000", "00000", '"00000"', "value 0"),
          (307, "empty", "", '""', "no digits"),
          (308, "string-123456", "123456", '"123456"', "six digits"),
          (309, "string-65536", "65536", '"65536"', "above 65535"),
          (310, "hex", "0x1bb", '"0x1bb"', "not decimal digits"),
          (311, "fullwidth-digits", "４４３", '"４４３" (fullwidth digits)', "not ASCII digits"),
          (312, "integer-0", 0, "0", "0 is not a port"),
          (313, "integer-minus-1", -1, "-1", "negative"),
          (314, "integer-70000", 70000, "70000", "above 65535"),
          (315, "integer-65536", 65536, "65536", "above 65535"),
      ]],
    bad_msg("open-host-empty", "TCP open whose host is the empty string.", "client",
            tcp_open(320, host=""), E("message.invalidValue", OPENFAIL, "host", 320)),
    bad_msg("open-host-254", "TCP open whose host is 254 bytes long (at most 253).", "client",
            tcp_open(321, host=HOST_253 + "d"), E("message.invalidValue", OPENFAIL, "host", 321)),
    bad_msg("open-tunnel-type-2", "Open with tunnel-type 2.", "client",
            tcp_open(322, tunnel_type=2), E("message.invalidValue", OPENFAIL, "tunnel-type", 322)),
    bad_msg("open-tunnel-type-minus-1", "Open with tunnel-type -1.", "client",
            tcp_open(323, tunnel_type=-1), E("message.invalidValue", OPENFAIL, "tunnel-type", 323)),
    bad_msg("open-flow-type-2", "App-layer open with app-proxy-flow-type 2 (only 1 TCP and 3 UDP exist).", "client",
            tcp_open(324, app_proxy_flow_type=2), E("message.invalidValue", OPENFAIL, "app-proxy-flow-type", 324)),
    bad_msg("open-flow-type-0", "App-layer open with app-proxy-flow-type 0.", "client",
            tcp_open(325, app_proxy_flow_type=0), E("message.invalidValue", OPENFAIL, "app-proxy-flow-type", 325)),
    bad_msg("open-identifier-0", "A well-formed TCP open with identifier 0, which is reserved (A6): answered with openResult 1.", "client",
            tcp_open(0), E("message.invalidValue", OPENFAIL, "identifier", 0)),
    bad_msg("data-udp-port-0", "UDP data with port 0.", "client",
            W("data", 330, data=b"x", host="198.51.100.53", port=0), E("message.invalidValue", DROP, "port", 330)),
    bad_msg("data-udp-port-string-plus", "UDP data with port \"+53\".", "client",
            W("data", 331, data=b"x", host="198.51.100.53", port="+53"), E("message.invalidValue", DROP, "port", 331)),
    bad_msg("data-udp-port-70000", "UDP data with port 70000.", "server",
            W("data", 332, data=b"x", host="198.51.100.53", port=70000), E("message.invalidValue", DROP, "port", 332)),
    bad_msg("data-udp-host-empty", "UDP data with an empty host.", "client",
            W("data", 333, data=b"x", host="", port=53), E("message.invalidValue", DROP, "host", 333)),
    *[bad_msg(f"close-type-{v}", f"Close with close-type {v} (must be 1..4).", "client",
              W("close", 340 + i, close_type=v), E("message.invalidValue", DROP, "close-type", 340 + i))
      for i, v in enumerate([0, 5, 7, -1])],
    bad_msg("openresult-result-code-9", "openResult with result-code 9.", "server",
            W("openResult", 350, result_code=9), E("message.invalidValue", DROP, "result-code", 350)),
    bad_msg("openresult-result-code-minus-1", "openResult with result-code -1.", "server",
            W("openResult", 351, result_code=-1), E("message.invalidValue", DROP, "result-code", 351)),
    bad_msg("authenticateresult-result-code-1", "authenticateResult with result-code 1 (only 0 and 3 exist, B2).", "server",
            W("authenticateResult", 0, result_code=1), E("message.invalidValue", DROP, "result-code", 0)),
    bad_msg("packets-more-packets-than-protocols", "packets with two packets but one protocol.", "client",
            W("packets", 360, packets=[ipv4_udp(40, 1), ipv4_udp(40, 2)], protocols=[2]),
            E("message.invalidValue", DROP, "protocols", 360)),
    bad_msg("packets-more-protocols-than-packets", "packets with one packet but two protocols.", "server",
            W("packets", 361, packets=[ipv6_udp(60, 1)], protocols=[30, 30]),
            E("message.invalidValue", DROP, "protocols", 361)),
]


# =============================================================================
# 4. Reference decoder: plistlib + the rules of PROTOCOL.md
# =============================================================================

class Rejected(Exception):
    def __init__(self, kind, disposition, key=None, identifier=None):
        super().__init__(kind)
        self.error = E(kind, disposition, key, identifier)


def is_int(v):
    return type(v) is int


PORT_STRING = re.compile(r"[0-9]{1,5}")  # Python's [0-9] is ASCII only


def decode_frame(blob: bytes) -> dict:
    if len(blob) < 4:
        raise Rejected("frame.truncated", CLOSE)
    (n,) = struct.unpack("<I", blob[:4])
    if n < 5:
        raise Rejected("frame.lengthTooSmall", CLOSE)
    if n > MAX_FRAME:
        raise Rejected("frame.lengthTooLarge", CLOSE)
    if len(blob) < n:
        raise Rejected("frame.truncated", CLOSE)
    assert len(blob) == n, "a fixture holds exactly one frame"
    try:
        value = plistlib.loads(blob[4:])
    except Exception:  # InvalidFileException, ExpatError, RecursionError, ...
        raise Rejected("plist.invalid", CLOSE)
    return decode_message(value)


def decode_message(m) -> dict:
    if type(m) is not dict:
        raise Rejected("message.notADictionary", CLOSE)
    raw_id = m.get("identifier")
    known_id = raw_id if is_int(raw_id) and INT64_MIN <= raw_id <= INT64_MAX else None
    if "command" not in m:
        raise Rejected("message.missingCommand", CLOSE, identifier=known_id)
    cmd = m["command"]
    if not is_int(cmd):
        raise Rejected("message.commandNotInteger", CLOSE, identifier=known_id)
    if cmd not in COMMANDS:
        raise Rejected("message.unknownCommand", IGNORE, identifier=known_id)
    if "identifier" not in m:
        raise Rejected("message.missingIdentifier", DROP)
    if not is_int(raw_id):
        raise Rejected("message.identifierNotInteger", DROP)
    if known_id is None:
        raise Rejected("message.identifierOutOfRange", DROP)
    name = COMMANDS[cmd]
    ident = known_id
    disp = OPENFAIL if name == "open" else DROP

    def fail(kind, key):
        raise Rejected(kind, disp, key, ident)

    def get(key, check, required):
        if key not in m:
            if required:
                fail("message.missingKey", key)
            return None
        v = m[key]
        if not check(v):
            fail("message.wrongType", key)
        return v

    def host(required):
        h = get("host", lambda v: type(v) is str, required)
        if h is not None and not (1 <= len(h.encode("utf-8")) <= 253):
            fail("message.invalidValue", "host")
        return h

    def port(required):
        p = get("port", lambda v: is_int(v) or type(v) is str, required)
        if p is None:
            return None
        if type(p) is str:
            if not PORT_STRING.fullmatch(p):
                fail("message.invalidValue", "port")
            p = int(p)
        if not 1 <= p <= 65535:
            fail("message.invalidValue", "port")
        return p

    out = {"command": name, "identifier": ident}
    if name == "data":
        out["data"] = bytes_meaning(get("data", lambda v: type(v) is bytes, True))
        h, p = host(False), port(False)
        if h is not None:
            out["host"] = h
        if p is not None:
            out["port"] = p
    elif name == "close":
        t = get("close-type", is_int, False)
        if t is not None and t not in CLOSE_TYPES:
            fail("message.invalidValue", "close-type")
        out["direction"] = CLOSE_TYPES[t] if t is not None else "all"
    elif name == "dns":
        out["dnsPacket"] = bytes_meaning(get("dns-packet", lambda v: type(v) is bytes, True))
        src = get("dns-packet-source", lambda v: type(v) is str, False)
        if src is not None:
            out["dnsPacketSource"] = src
    elif name == "open":
        tt = get("tunnel-type", is_int, True)
        if tt not in (0, 1):
            fail("message.invalidValue", "tunnel-type")
        out["tunnelType"] = "app" if tt == 0 else "ip"
        if tt == 0:
            fk = get("app-proxy-flow-type", is_int, True)
            if fk not in (1, 3):
                fail("message.invalidValue", "app-proxy-flow-type")
            out["flowKind"] = "tcp" if fk == 1 else "udp"
            if fk == 1:
                out["host"] = host(True)
                out["port"] = port(True)
        if ident == 0:
            fail("message.invalidValue", "identifier")
    elif name == "openResult":
        rc = get("result-code", is_int, True)
        if rc not in RESULTS:
            fail("message.invalidValue", "result-code")
        out["result"] = RESULTS[rc]
        c = get("configuration", lambda v: type(v) is dict, False)
        if c is not None:
            out["configuration"] = typed(c)
    elif name == "packets":
        ps = get("packets", lambda v: type(v) is list and all(type(x) is bytes for x in v), True)
        pr = get("protocols", lambda v: type(v) is list and all(is_int(x) for x in v), True)
        if len(ps) != len(pr):
            fail("message.invalidValue", "protocols")
        out["packets"] = [bytes_meaning(p) for p in ps]
        out["protocols"] = pr
    elif name == "fetchConfiguration":
        c = get("configuration", lambda v: type(v) is dict, False)
        if c is not None:
            out["configuration"] = typed(c)
    elif name == "authenticate":
        out["login"] = get("login", lambda v: type(v) is str, True)
        out["password"] = get("password", lambda v: type(v) is str, True)
    elif name == "authenticateResult":
        rc = get("result-code", is_int, True)
        if rc not in (0, 3):
            fail("message.invalidValue", "result-code")
        out["result"] = RESULTS[rc]
    return out


def bytes_meaning(b: bytes) -> dict:
    """How the tables write BYTES: a counter for big counter payloads, hex otherwise."""
    if len(b) >= 4096 and b == counter(len(b)):
        return counterm(len(b))
    return hexm(b)


def strict_equal(a, b) -> bool:
    """Equality that keeps bool, int and float apart (Python's == says True == 1 == 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


# =============================================================================
# 5. Writing, README, verification
# =============================================================================

def dump_json(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def valid_payload(v: Valid) -> Optional[bytes]:
    if v.fmt == "binary":
        return bplist(v.plist, v.sort_keys)
    if v.fmt == "xml":
        return xmlplist(v.plist, v.sort_keys)
    return None  # "cf": written by generate-cf.swift


def writer_name(v: Valid) -> str:
    return {"binary": "plistlib (binary)", "xml": "plistlib (XML)", "cf": "CoreFoundation (binary)"}[v.fmt]


def owned_files() -> dict:
    """Every file this script writes, with its content (cf-*.bin are written by Swift)."""
    files = {}
    for v in VALID:
        payload = valid_payload(v)
        if payload is not None:
            files[VALID_DIR / f"{v.name}.bin"] = frame(payload)
        else:
            files[CF_SOURCE_DIR / f"{v.name}.plist"] = xmlplist(v.plist, v.sort_keys)
        files[VALID_DIR / f"{v.name}.json"] = dump_json(
            {"description": v.description, "sender": v.sender, "message": v.message}).encode()
    for i in INVALID:
        files[INVALID_DIR / f"{i.name}.bin"] = i.content
        files[INVALID_DIR / f"{i.name}.json"] = dump_json(
            {"description": i.description, "sender": i.sender, "error": i.error}).encode()
    files[README] = readme().encode()
    return files


def cf_outputs() -> set:
    return {VALID_DIR / f"{v.name}.bin" for v in VALID if v.fmt == "cf"}


def write_all():
    names = [f.name for f in VALID] + [f.name for f in INVALID]
    assert len(names) == len(set(names)), "fixture names must be unique"
    files = owned_files()
    keep = set(files) | cf_outputs()
    for d in (VALID_DIR, INVALID_DIR, CF_SOURCE_DIR):
        d.mkdir(exist_ok=True)
        for p in d.iterdir():
            if p not in keep:
                p.unlink()
    for p, content in files.items():
        p.write_bytes(content)


def verify() -> int:
    problems = []

    def problem(name, msg):
        problems.append(f"{name}: {msg}")

    # Byte for byte what this script writes: a fixture rewritten by anything
    # else (our own encoder, a hand edit) fails here, as does a missing or a
    # stray file.
    files = owned_files()
    for p, content in files.items():
        if not p.exists():
            problem(p.name, "missing (rerun generate.py)")
        elif p.read_bytes() != content:
            problem(p.name, "differs from what generate.py writes (rerun it, or fix the table)")
    keep = set(files) | cf_outputs()
    for d in (VALID_DIR, INVALID_DIR, CF_SOURCE_DIR):
        for p in (d.iterdir() if d.exists() else []):
            if p not in keep:
                problem(p.name, "not written by generate.py (delete it, or add it to the table)")

    for v in VALID:
        binf = VALID_DIR / f"{v.name}.bin"
        if not binf.exists():
            problems.append(f"{v.name}: missing {binf.name}" + (" (run: swift Fixtures/generate-cf.swift)" if v.fmt == "cf" else ""))
            continue
        blob = binf.read_bytes()
        meaning = json.loads((VALID_DIR / f"{v.name}.json").read_text("utf-8"))
        n = struct.unpack("<I", blob[:4])[0]
        if n != len(blob):
            problem(v.name, f"length prefix {n} != file size {len(blob)}")
        if len(blob) > MAX_FRAME:
            problem(v.name, f"frame of {len(blob)} bytes exceeds {MAX_FRAME}")
        payload = blob[4:]
        if v.fmt in ("binary", "cf") and not payload.startswith(b"bplist00"):
            problem(v.name, "payload is not bplist00")
        if v.fmt == "xml" and not payload.startswith(b"<?xml"):
            problem(v.name, "payload is not XML")
        try:
            back = plistlib.loads(payload)
        except Exception as e:
            problem(v.name, f"plistlib cannot read it back: {e!r}")
            continue
        if not strict_equal(back, plain(v.plist)):
            problem(v.name, "payload does not read back to the dict that was written")
        if v.check is not None:
            try:
                v.check(payload)
            except AssertionError as e:
                problem(v.name, f"structure check failed: {e}")
        try:
            decoded = decode_frame(blob)
        except Rejected as r:
            problem(v.name, f"reference decoder rejects it: {r.error}")
            continue
        if decoded != v.message:
            problem(v.name, f"meaning mismatch:\n  table:   {v.message}\n  decoder: {decoded}")
        if meaning["message"] != v.message or meaning["description"] != v.description:
            problem(v.name, f"{v.name}.json differs from the table (rerun generate.py)")
        if meaning["sender"] not in ("client", "server"):
            problem(v.name, "bad sender")

    for i in INVALID:
        blob = (INVALID_DIR / f"{i.name}.bin").read_bytes()
        meaning = json.loads((INVALID_DIR / f"{i.name}.json").read_text("utf-8"))
        if meaning["error"] != i.error:
            problem(i.name, "error JSON differs from the table")
        if not i.error["kind"].startswith("frame."):
            n = struct.unpack("<I", blob[:4])[0]
            if n != len(blob):
                problem(i.name, f"length prefix {n} != file size {len(blob)}")
        if i.baseline is not None:
            try:
                decode_frame(frame(i.baseline))
            except Rejected as r:
                problem(i.name, f"its unbroken baseline does not decode: {r.error}")
            if i.baseline == blob[4:]:
                problem(i.name, "identical to its baseline")
        try:
            decode_frame(blob)
            got = None
        except Rejected as r:
            got = r.error
        if i.plistlib_lenient is not None:
            if got is not None and got["kind"] == "plist.invalid":
                problem(i.name, "marked plistlib_lenient but plistlib rejects it; drop the mark")
        elif got != i.error:
            problem(i.name, f"reference decoder says {got}, table says {i.error}")

    for p in problems:
        print("FAIL", p, file=sys.stderr)
    cf_present = sum(1 for v in VALID if v.fmt == "cf" and (VALID_DIR / f"{v.name}.bin").exists())
    print(f"verified {len(VALID)} valid ({cf_present} written by CoreFoundation) "
          f"and {len(INVALID)} invalid fixtures: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


README_HEAD = """\
# Golden wire fixtures

Frames of the SimpleTunnel protocol (`docs/PROTOCOL.md`, sections
A1-A6, B2, B5) with the meaning a correct reader must give them. The Swift
codec tests read them; nothing here is copied from public code.

**Generated files: do not edit by hand.** Change `generate.py` and rerun it.

## Layout

```
Fixtures/
  generate.py          writes everything below and verifies it (Python 3.11, stdlib only)
  generate-cf.swift    optional: writes valid/cf-*.bin with CoreFoundation
  cf-source/NAME.plist XML input of each cf-* fixture (generate-cf.swift reads it)
  valid/NAME.bin       exactly one whole frame: 4-byte little-endian length (counting itself) + payload
  valid/NAME.json      what a reader must decode from it
  invalid/NAME.bin     a broken frame, or a frame whose message must be refused
  invalid/NAME.json    which error, and what the receiver does about it
```

## Who wrote the bytes

- Fixtures without a prefix: Python's `plistlib` (`FMT_BINARY`, keys sorted
  unless the fixture says otherwise; the `xml-*` ones use `FMT_XML`).
  plistlib shares equal strings and numbers, writes 1/2/4/8-byte
  integers (8 bytes for any negative value, 16 bytes for 2**63..2**64-1),
  always 8-byte reals, non-ASCII strings as UTF-16, and sizes its offsets
  and object references to the document.
- Values plistlib refuses to write (2**64, 2**64+1, -2**63-1) are written as
  16-byte integer objects by patching a placeholder's bytes.
- The hand-broken binary property lists (`invalid/plist-*`) come from a small
  assembler in generate.py; each has an unbroken baseline that the script
  checks decodes cleanly, so the named defect is the only one.
- `cf-*`: CoreFoundation, via swift-corelibs-foundation's
  `PropertyListSerialization.data(fromPropertyList:format:.binary,options:0)`
  (run `swift Fixtures/generate-cf.swift`). It reads `cf-source/NAME.plist`
  (XML written by plistlib, so the types are exact) and writes the frame.
  CF orders keys and objects differently from plistlib.

## Regenerate

```
python3 Fixtures/generate.py            # all plistlib fixtures, meanings, this README; then verify
swift Fixtures/generate-cf.swift        # the cf-*.bin frames (optional; needs a Swift toolchain)
python3 Fixtures/generate.py --verify   # verify everything on disk, cf-* included
```

Verification: every valid frame's length prefix equals its size, is at most
131072, and its payload reads back with plistlib to exactly the value written
(bool, integer and real kept apart); every valid and invalid fixture is run
through a reference decoder in generate.py (plistlib plus the rules of
PROTOCOL.md) that must produce the meaning or error in the JSON. A few broken
bplists that plistlib is too lenient to notice (cycles, offsets into the
header or the table) are marked so in the table; their baseline is still
checked.

## Meaning of a valid fixture (`valid/NAME.json`)

```json
{ "description": "one sentence", "sender": "client" | "server",
  "message": { "command": "<name>", "identifier": <int>, ...fields } }
```

| command | fields (decoded meaning; absent keys are absent) |
|---|---|
| data | `data`: BYTES; UDP also `host`, `port` (a number even when the wire had a string) |
| suspend, resume | none |
| close | `direction`: `none` / `read` / `write` / `all` (no close-type = `all`) |
| dns | `dnsPacket`: BYTES, optional `dnsPacketSource`: `"addr:port"` |
| open | `tunnelType`: `app` / `ip`, optional `flowKind`: `tcp` / `udp`, optional `host`, optional `port` (number) |
| openResult | `result`: `success` / `invalidParameter` / `noSuchHost` / `refused` / `timeout` / `internalError`, optional `configuration`: PLIST |
| packets | `packets`: [BYTES], `protocols`: [int] (raw numbers; unknown ones such as 99 are not errors) |
| fetchConfiguration | optional `configuration`: PLIST |
| authenticate | `login`, `password` |
| authenticateResult | `result`: `success` / `refused` |

BYTES is `{"hex": "00ff.."}`, or `{"counter": N}`: N bytes whose i-th byte is
i % 256. PLIST is typed JSON: `{"dict": {"k": PLIST}}`, `{"array": [PLIST]}`,
`{"string": "s"}`, `{"integer": n}`, `{"bool": true}`, `{"real": 1.5}`,
`{"data": BYTES}`. Identifiers are JSON integers in the signed 64-bit range.

## Error of an invalid fixture (`invalid/NAME.json`)

```json
{ "description": "...", "sender": "client" | "server",
  "error": { "kind": "<kind>", "disposition": "<disposition>", "key": "<wire key>", "identifier": <int> } }
```

`key` is present when the kind names one; `identifier` whenever the message
had a valid (signed 64-bit) integer identifier.

| kind | disposition |
|---|---|
| `frame.lengthTooSmall` (len < 5) | `closeTunnel` |
| `frame.lengthTooLarge` (len > 131072; the header alone decides) | `closeTunnel` |
| `frame.truncated` (the file, i.e. the stream, ends before len bytes) | `closeTunnel` |
| `plist.invalid` | `closeTunnel` |
| `message.notADictionary` | `closeTunnel` |
| `message.missingCommand` | `closeTunnel` |
| `message.commandNotInteger` | `closeTunnel` |
| `message.unknownCommand` (any integer outside 1..11) | `ignore` |
| `message.missingIdentifier` | `drop` |
| `message.identifierNotInteger` | `drop` |
| `message.identifierOutOfRange` (outside signed 64 bits) | `drop` |
| `message.missingKey` | `openFailure` for open, else `drop` |
| `message.wrongType` | `openFailure` for open, else `drop` |
| `message.invalidValue` | `openFailure` for open, else `drop` |

Each invalid fixture has exactly one defect, so the order in which a reader
checks things does not matter for these files.
"""


def readme() -> str:
    out = [README_HEAD]
    out.append(f"\n## Valid fixtures ({len(VALID)})\n\n| name | sender | writer | meaning |\n|---|---|---|---|\n")
    for v in VALID:
        out.append(f"| `{v.name}` | {v.sender} | {writer_name(v)} | {v.description.replace('|', '/')} |\n")
    out.append(f"\n## Invalid fixtures ({len(INVALID)})\n\n| name | sender | error | meaning |\n|---|---|---|---|\n")
    for i in INVALID:
        e = i.error
        err = f"`{e['kind']}` → `{e['disposition']}`" + (f" (`{e['key']}`)" if "key" in e else "")
        out.append(f"| `{i.name}` | {i.sender} | {err} | {i.description.replace('|', '/')} |\n")
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verify", action="store_true", help="only verify the files on disk")
    args = ap.parse_args()
    if not args.verify:
        write_all()
    return verify()


if __name__ == "__main__":
    sys.exit(main())
