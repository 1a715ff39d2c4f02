#!/usr/bin/env python3
"""Helper for Benchmarks/database-logins.sh (Python 3 standard library only).

  users --count N --iterations I --users-file F --sql-file S
      Logins user0..userN-1 with passwords pw-user0..: a users file and the
      same records as SQL for the shared database.

  run --port P --count N --concurrency C --mode logins|tunnels
      N clients, C at a time, each its own login: TLS, authenticate (and for
      tunnels also open an IP flow and wait for its lease), then close.
      Prints one JSON object: completed, failures, seconds, per_second.
      Connects to 127.0.0.1 only (the script runs it inside its own network
      namespace), each client from its own loopback address (127.1.x.y), as
      clients on their own machines would: from one address the server's
      per-address login budget (2 checks at a time) would refuse most.
"""

import argparse
import hashlib
import json
import os
import socket
import ssl
import threading
import time

# The tunnel's framing, as the admission benchmark speaks it.
from admission_flood_helper import frame, read_frame


def users(args):
    with open(args.users_file, "w") as users_file, open(args.sql_file, "w") as sql:
        for index in range(args.count):
            salt = os.urandom(16)
            digest = hashlib.pbkdf2_hmac("sha256", b"pw-user%d" % index, salt, args.iterations, 32)
            record = "pbkdf2-sha256$%d$%s$%s" % (args.iterations, salt.hex(), digest.hex())
            users_file.write("user%d:%s\n" % (index, record))
            sql.write("INSERT INTO simpletunnel_logins (login, hash) VALUES ('user%d', '%s');\n" % (index, record))
    os.chmod(args.users_file, 0o600)


def one_client(port, index, mode):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    source = ("127.1.%d.%d" % (index // 250, index % 250 + 1), 0)
    with socket.create_connection(("127.0.0.1", port), timeout=60, source_address=source) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.settimeout(60)
            tls.sendall(frame({"identifier": 0, "command": 10, "login": "user%d" % index, "password": "pw-user%d" % index}))
            answer = read_frame(tls)
            if answer is None or answer.get("result-code") != 0:
                return False
            if mode == "logins":
                return True
            tls.sendall(frame({"identifier": 1, "command": 6, "tunnel-type": 1}))
            while True:
                answer = read_frame(tls)
                if answer is None:
                    return False
                if answer.get("command") == 7 and answer.get("identifier") == 1:
                    return answer.get("result-code") == 0


def run(args):
    next_index = [0]
    completed = [0]
    failures = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if next_index[0] >= args.count:
                    return
                index = next_index[0]
                next_index[0] += 1
            try:
                ok = one_client(args.port, index, args.mode)
            except Exception:  # noqa: BLE001 - every failure is a result here
                ok = False
            with lock:
                if ok:
                    completed[0] += 1
                else:
                    failures[0] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    print(json.dumps({
        "mode": args.mode, "completed": completed[0], "failures": failures[0],
        "seconds": round(seconds, 2), "per_second": round(completed[0] / seconds, 1),
    }))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("users")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--iterations", type=int, required=True)
    p.add_argument("--users-file", required=True)
    p.add_argument("--sql-file", required=True)
    p = sub.add_parser("run")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--mode", choices=["logins", "tunnels"], required=True)
    args = parser.parse_args()
    {"users": users, "run": run}[args.command](args)


if __name__ == "__main__":
    main()
