#!/usr/bin/env python3
"""Fails when a file of one layer names a type declared in a layer above it.

The layers, lowest first, are the folders of ARCHITECTURE.md: SimpleTunnelWire
(its own target), then SimpleTunnelServices' Support, Config, System, TLS,
Multiplexer, Endpoints, and Server and Client, which must not name each other.
A type counts by its top-level declaration; comments are ignored.
SimpleTunnelDatabase, above the server, is a target the library does not
depend on, so the compiler already keeps the library from naming it.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BELOW = ["Wire", "Support", "Config", "System", "TLS", "Multiplexer", "Endpoints"]
RANK = {layer: index for index, layer in enumerate(BELOW)}
RANK["Server"] = RANK["Client"] = len(BELOW)
DECLARATION = re.compile(
    r"^(?:(?:public|package|internal|final|private|fileprivate|indirect) )*"
    r"(?:struct|class|enum|protocol|typealias|actor)\s+([A-Z]\w*)", re.M)


def layer_of(path):
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts[1] == "SimpleTunnelWire":
        return "Wire"
    return parts[2] if len(parts) > 3 else None


files = {}
for target in ("SimpleTunnelWire", "SimpleTunnelServices"):
    for directory, _, names in os.walk(os.path.join(ROOT, "Sources", target)):
        for name in names:
            if name.endswith(".swift"):
                path = os.path.join(directory, name)
                with open(path) as file:
                    files[path] = re.sub(r"//.*", "", file.read())

owner = {}
for path, text in files.items():
    for match in DECLARATION.finditer(text):
        owner.setdefault(match.group(1), layer_of(path))

problems = []
for path, text in sorted(files.items()):
    layer = layer_of(path)
    if layer not in RANK:
        continue
    for name, above in owner.items():
        if above not in RANK or above == layer or RANK[above] < RANK[layer]:
            continue
        if re.search(r"\b" + name + r"\b", text):
            problems.append(f"{os.path.relpath(path, ROOT)} ({layer}) names {name} ({above})")

for problem in problems:
    print(problem)
if problems:
    sys.exit(f"{len(problems)} names of a higher layer; see ARCHITECTURE.md")
print(f"layers: {len(files)} files, none names a higher layer")
