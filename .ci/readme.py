#!/usr/bin/env python3
"""Runs the README's commands that can run on one machine, as written.

Everything runs in a network namespace this script creates and deletes, so
the README's own ports (4433, 8080, 1080, 5353, 9464) and names work without
touching the host: `/etc/netns/NAME/hosts` makes `vpn.example.com` loopback and
`example.internal` 10.0.0.80, `/etc/netns/NAME/resolv.conf` points at nothing,
and the TUN devices of the VPN example live there. The README's destinations,
an HTTP server on example.internal:80 and a UDP echo on 10.0.0.53:53, run in a
second namespace behind it (over a veth pair), as a network behind a server
is: a server listening on 0.0.0.0 refuses its own addresses and loopback.

Each command is taken from README.md by its first words, so a command that
changes in the README is run as changed, and one that disappears fails here.
What is replaced, and why, is printed with each command:
  - `swift run X` runs X from the debug build (what `swift run` would run);
  - `tunnel-server`/`tunnel-client` come from that build, as after Install;
  - `sudo` is dropped (this runs as root);
  - HEX is the fingerprint the server printed;
  - `...` stands for options the README leaves to the reader (named here);
  - `/etc/simpletunnel` is a temporary folder, and `--owner simpletunnel`
    is `--owner nobody` (no such user here);
  - of `[--tun stun1] [--no-routes] [--dns] [--kill-switch off] [--allow-lan …]`,
    `--tun stun1 --no-routes`
    (one namespace holds both ends, so routing everything would loop).
  - in the several-servers section, `sudo -u postgres` is `runuser -u
    postgres --` against a throwaway cluster (initdb in a temporary folder,
    listening on 127.0.0.1:5432, which `db.internal` names here), and `$DB`
    is the address the README sets it to.
Not run: the release build and install, and the package's build and install
(slow; the debug build stands in; Packaging/test-install.sh, which .ci/run
runs, installs the package on a fresh Debian 12 and uses it), nft (absent on
some machines; skipped saying so, unless SIMPLETUNNEL_REQUIRE_ALL_TESTS=1 as in CI), the load balancer (the HAProxy test runs it).

Usage: python3 .ci/readme.py   (as root, after `swift build`)
"""
import glob
import grp
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
README = os.path.join(ROOT, "README.md")
NAMESPACE = f"st-readme-{os.getpid()}"
DESTINATIONS = f"st-readme-dest-{os.getpid()}"
PAGE = b"served on example.internal:80 inside the namespace\n"
PASSWORD = "correct horse battery staple"


class Failure(Exception):
    pass


def readme_text():
    with open(README) as readme:
        return readme.read()


def readme_commands():
    """Every command of the README's sh and bash blocks: continuation lines joined, comments dropped."""
    commands, block, pending = [], False, ""
    for line in readme_text().splitlines():
        if line.startswith("```"):
            block = line.strip() in ("```sh", "```bash") if not block else False
            continue
        if not block:
            continue
        text = pending + line.strip()
        if text.endswith("\\"):
            pending = text[:-1].rstrip() + " "
            continue
        pending = ""
        if text and not text.startswith("#"):
            commands.append(text)
    return commands


def mentioned(text):
    """A command the README names in its prose (in backticks), returned as it is there."""
    if f"`{text}" not in readme_text():
        raise Failure(f"README.md no longer mentions `{text}`; update .ci/readme.py")
    return text


def command(prefix, commands=None):
    """The README's command that starts with `prefix`, its trailing comment removed."""
    for text in commands or readme_commands():
        if text.startswith(prefix):
            return re.sub(r"\s+#.*$", "", text)
    raise Failure(f"README.md has no command starting with {prefix!r}; update .ci/readme.py with it")


def outside():
    """Makes the namespace and its name files, runs this script inside, removes them."""
    if os.geteuid() != 0:
        message = "readme: skipped, needs root to make a network namespace"
        if os.environ.get("SIMPLETUNNEL_REQUIRE_ALL_TESTS") == "1":
            sys.exit(message.replace("skipped", "failed"))
        print(message)
        return
    names = f"/etc/netns/{NAMESPACE}"
    os.makedirs(names)
    try:
        with open(f"{names}/hosts", "w") as hosts:
            hosts.write("127.0.0.1 localhost vpn.example.com db.internal\n10.0.0.80 example.internal\n::1 localhost\n")
        with open(f"{names}/resolv.conf", "w") as resolv:
            resolv.write("nameserver 127.0.0.1\n")
        subprocess.run(["ip", "netns", "add", NAMESPACE], check=True)
        subprocess.run(["ip", "netns", "add", DESTINATIONS], check=True)
        try:
            for namespace in (NAMESPACE, DESTINATIONS):
                subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True)
            subprocess.run(["ip", "-n", NAMESPACE, "link", "add", "to-dest", "type", "veth", "peer", "name", "to-main",
                            "netns", DESTINATIONS], check=True)
            subprocess.run(["ip", "-n", NAMESPACE, "addr", "add", "10.0.0.1/24", "dev", "to-dest"], check=True)
            subprocess.run(["ip", "-n", NAMESPACE, "link", "set", "to-dest", "up"], check=True)
            for address in ("10.0.0.53/24", "10.0.0.80/24"):
                subprocess.run(["ip", "-n", DESTINATIONS, "addr", "add", address, "dev", "to-main"], check=True)
            subprocess.run(["ip", "-n", DESTINATIONS, "link", "set", "to-main", "up"], check=True)
            destinations = subprocess.Popen(["ip", "netns", "exec", DESTINATIONS, sys.executable, __file__, "--destinations"])
            try:
                inside = subprocess.run(["ip", "netns", "exec", NAMESPACE, sys.executable, __file__, "--inside"])
            finally:
                destinations.kill()
                destinations.wait()
            sys.exit(inside.returncode)
        finally:
            subprocess.run(["ip", "netns", "del", DESTINATIONS])
            subprocess.run(["ip", "netns", "del", NAMESPACE])
    finally:
        for name in ("hosts", "resolv.conf"):
            if os.path.exists(f"{names}/{name}"):
                os.remove(f"{names}/{name}")
        os.rmdir(names)


class Run:
    """The programs started so far, their logs, and the environment they share."""

    def __init__(self, work, bin_path):
        self.work = work
        self.daemons = []
        self.environment = dict(os.environ)
        self.environment["PATH"] = bin_path + os.pathsep + self.environment["PATH"]
        self.environment["HOME"] = f"{work}/home"
        self.environment["XDG_RUNTIME_DIR"] = f"{work}/run"
        for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "SIMPLETUNNEL_PASSWORD"):
            self.environment.pop(name, None)
        os.makedirs(f"{work}/home", mode=0o700)
        os.makedirs(f"{work}/run", mode=0o700)

    @staticmethod
    def adapt(text, replacements):
        for old, new in replacements:
            if old not in text:
                raise Failure(f"expected {old!r} in the README's command: {text}")
            text = text.replace(old, new)
        text = re.sub(r"^sudo ", "", text)
        return re.sub(r"^swift run ", "", text)

    def shell(self, text, stdin=None, extra=None):
        """Runs a command to its end; fails with its output unless it exits 0."""
        print(f"$ {text}", flush=True)
        environment = dict(self.environment, **(extra or {}))
        done = subprocess.run(["bash", "-c", text], cwd=self.work, env=environment, input=stdin,
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise Failure(f"exit {done.returncode}: {text}\n{done.stdout}{done.stderr}")
        return done.stdout + done.stderr

    def start(self, text, ready, what):
        """Starts a long-running command; waits (10 s at most) until `ready(log)` holds."""
        print(f"$ {text} &", flush=True)
        log_path = f"{self.work}/{what}.log"
        log = open(log_path, "w")
        process = subprocess.Popen(["bash", "-c", "exec " + text], cwd=self.work, env=self.environment,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.daemons.append((process, what, log_path))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(log_path) as current:
                content = current.read()
            if ready(content):
                return process, content
            if process.poll() is not None:
                raise Failure(f"{what} exited with {process.returncode}:\n{content}")
            time.sleep(0.1)
        raise Failure(f"{what} was not ready within 10 s:\n{content}")

    def stop(self, process):
        """SIGTERM, as the README's Ctrl-C; it must exit cleanly within 10 s."""
        for index, (daemon, what, log_path) in enumerate(self.daemons):
            if daemon is process:
                del self.daemons[index]
                daemon.send_signal(signal.SIGTERM)
                try:
                    status = daemon.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    raise Failure(f"{what} did not stop within 10 s of SIGTERM")
                if status != 0:
                    with open(log_path) as log:
                        raise Failure(f"{what} exited with {status} on SIGTERM:\n{log.read()}")
                return

    def stop_all(self):
        for daemon, _, _ in self.daemons:
            daemon.kill()
            daemon.wait()
        self.daemons = []


def eventually(check, what, seconds=10):
    """Retries `check` until it returns a value: a client accepts before its tunnel is up."""
    deadline, last = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except OSError as error:
            last = error
        time.sleep(0.2)
    raise Failure(f"{what} did not work within {seconds} s (last error: {last})")


def http_get(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3) as connection:
        connection.sendall(b"GET / HTTP/1.0\r\nHost: example.internal\r\n\r\n")
        reply = b""
        while chunk := connection.recv(4096):
            reply += chunk
    return reply.endswith(PAGE)


def udp_exchange(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.settimeout(1)
        udp.sendto(b"a datagram", ("127.0.0.1", port))
        return udp.recvfrom(2048)[0] == b"a datagram"


def http_reachable(host, port):
    with socket.create_connection((host, port), timeout=1):
        return True


def destinations():
    """The README's destinations: an HTTP server on example.internal:80, a UDP echo on 10.0.0.53:53."""
    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *arguments):
            pass

    web = HTTPServer(("10.0.0.80", 80), Page)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("10.0.0.53", 53))

    def answer():
        while True:
            data, peer = echo.recvfrom(2048)
            echo.sendto(data, peer)

    threading.Thread(target=answer, daemon=True).start()


def first_run(run, commands):
    """Run it: the server with no arguments, then config, forward and socks with its fingerprint."""
    server_text = run.adapt(command("swift run tunnel-server", commands), [])
    server, log = run.start(server_text, lambda log: "connect with:" in log, "server")
    match = re.search(r"connect with: ((?:swift run )?tunnel-client config --server 127\.0\.0\.1:4433 --pin-sha256 ([0-9a-f]{64}))", log)
    if not match or "no IP layer" not in log:
        raise Failure(f"the first run's log is not as the README shows:\n{log}")
    hex_pin = match.group(2)
    printed = run.shell(run.adapt(match.group(1), []))  # the command it prints, pasted (swift run: from the package folder)
    json.loads(printed)
    pin = [("HEX", hex_pin)]
    json.loads(run.shell(run.adapt(command("swift run tunnel-client config --server 127.0.0.1:4433", commands), pin)))

    forward, _ = run.start(run.adapt(command("swift run tunnel-client forward", commands), pin),
                           lambda log: "tunnel up" in log, "forward")
    eventually(lambda: http_get(8080), "HTTP through -L 8080:example.internal:80")
    eventually(lambda: udp_exchange(5353), "a datagram through -U 5353:10.0.0.53:53")
    run.shell(mentioned("tunnel-client stop"))
    forward.wait(timeout=10)

    socks, _ = run.start(run.adapt(command("swift run tunnel-client socks", commands), pin),
                         lambda log: "tunnel up" in log, "socks")
    page = run.shell(command("curl --socks5-hostname 127.0.0.1:1080", commands))
    if PAGE.decode() not in page:
        raise Failure(f"curl through the SOCKS proxy got: {page}")
    status = run.shell(mentioned("tunnel-client status"))
    if "state: connected" not in status or "server: 127.0.0.1:4433" not in status:
        raise Failure(f"tunnel-client status:\n{status}")
    run.stop(socks)
    run.stop(server)
    print(run.shell(command("tunnel-server --version", commands)).strip())


def certificates_and_vpn(run, commands):
    """The openssl recipe and server.plist, then the VPN's server and client in this namespace."""
    recipe = re.search(r"```bash\n(?:#[^\n]*\n)*(openssl req -x509.*?\nEOF\n)```", readme_text(), re.S)
    if not recipe:
        raise Failure("README.md has no CA recipe block starting with 'openssl req -x509'")
    run.shell(recipe.group(1))
    for name in ("ca.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem", "server.plist"):
        if not os.path.exists(f"{run.work}/{name}"):
            raise Failure(f"the CA recipe did not make {name}")

    server, _ = run.start(run.adapt(command("sudo tunnel-server --host 0.0.0.0 --port 4433 --config", commands), []),
                          lambda log: "listening on 0.0.0.0:4433" in log, "vpn-server")
    run.shell(run.adapt(command("sudo sysctl -w net.ipv4.ip_forward=1", commands), []))
    run.shell(run.adapt(command("sudo sysctl -w net.ipv6.conf.all.forwarding=1", commands), []))
    if subprocess.run(["bash", "-c", "command -v nft"], capture_output=True).returncode == 0:
        for prefix in ("sudo nft add table", "sudo nft add chain", "sudo nft add rule",
                       "sudo nft add table ip6", "sudo nft add chain ip6", "sudo nft add rule ip6"):
            run.shell(run.adapt(command(prefix, commands), []))
    elif os.environ.get("SIMPLETUNNEL_REQUIRE_ALL_TESTS") == "1":
        raise Failure("nft is not installed, and SIMPLETUNNEL_REQUIRE_ALL_TESTS says every README line must run (apt install nftables)")
    else:
        print("(nft is not installed here: the NAT lines are not run)")
    client_text = run.adapt(command("sudo tunnel-client ip --server vpn.example.com:4433", commands),
                            [("[--tun stun1] [--no-routes] [--dns] [--kill-switch off] [--allow-lan 192.168.1.0/24]", "--tun stun1 --no-routes")])
    client, _ = run.start(client_text, lambda log: "tunnel up" in log, "vpn-client")
    status = eventually(lambda: (lambda s: s if "on stun1" in s else None)(run.shell("tunnel-client status")),
                        "a lease on stun1")
    lease = re.search(r"lease: (10\.90\.0\.\d+)/32 on stun1", status)
    if not lease:
        raise Failure(f"tunnel-client status shows no lease from the pool:\n{status}")
    addresses = run.shell("ip -4 addr show dev stun1")
    if lease.group(1) not in addresses:
        raise Failure(f"stun1 does not carry the leased {lease.group(1)}:\n{addresses}")
    run.stop(client)
    run.stop(server)


def logins_and_metrics(run, commands):
    """passwd, a server with --users, clients with a password file and the environment, metrics."""
    users = [("/etc/simpletunnel", f"{run.work}/etc/simpletunnel")]
    said = run.shell(run.adapt(command("sudo tunnel-server passwd alice", commands),
                               users + [("--owner simpletunnel", "--owner nobody")]), stdin=PASSWORD + "\n")
    if "added" not in said:
        raise Failure(f"passwd did not say the user was added: {said}")
    folder = os.stat(f"{run.work}/etc/simpletunnel")
    if folder.st_mode & 0o777 != 0o700 or folder.st_uid != 65534:
        raise Failure(f"passwd made {run.work}/etc/simpletunnel mode {oct(folder.st_mode & 0o777)} uid {folder.st_uid}")
    listed = run.shell(run.adapt(command("sudo tunnel-server passwd --list", commands), users))
    if "alice" not in listed:
        raise Failure(f"passwd --list does not list alice: {listed}")

    # `...`: the server's certificate from the CA recipe, as the client's --ca expects.
    server_text = run.adapt(command("tunnel-server --host 0.0.0.0 --users", commands),
                            users + [("...", "--cert server.pem --key server-key.pem")])
    server, _ = run.start(server_text, lambda log: "listening on 0.0.0.0:4433" in log, "login-server")
    with open(f"{run.work}/home/.simpletunnel-password", "w", opener=lambda path, flags: os.open(path, flags, 0o600)) as file:
        file.write(PASSWORD + "\n")
    socks, _ = run.start(run.adapt(command("tunnel-client socks --server vpn.example.com:4433", commands), []),
                         lambda log: "tunnel up" in log, "login-socks")
    page = run.shell(command("curl --socks5-hostname 127.0.0.1:1080", commands))
    if PAGE.decode() not in page:
        raise Failure(f"curl through the logged-in SOCKS proxy got: {page}")
    run.stop(socks)
    environment_login = command("SIMPLETUNNEL_PASSWORD=... tunnel-client config", commands)
    json.loads(run.shell(environment_login.replace("SIMPLETUNNEL_PASSWORD=... ", ""), extra={"SIMPLETUNNEL_PASSWORD": PASSWORD}))
    run.stop(server)

    revoke_as_root(run, commands, users)

    metrics_flag = re.search(r"`(tunnel-server --metrics 127\.0\.0\.1:9464)`", readme_text())
    if not metrics_flag:
        raise Failure("README.md no longer shows `tunnel-server --metrics 127.0.0.1:9464`")
    server, _ = run.start(metrics_flag.group(1), lambda log: "listening on 127.0.0.1:4433" in log, "metrics-server")
    metrics = eventually(lambda: (lambda m: m if "simpletunnel_tunnels" in m else None)(
        run.shell("curl -s http://127.0.0.1:9464/metrics")), "the metrics page")
    # The paragraph that lists the metrics (table names elsewhere share the prefix).
    listing = re.search(r"serves Prometheus metrics.*?\n\n", readme_text(), re.S)
    if not listing:
        raise Failure("README.md has no paragraph saying which Prometheus metrics it serves")
    # Served only by a server given --database, as the README says beside it.
    database_only = {"simpletunnel_database_up"}
    for name in re.findall(r"`(simpletunnel_\w+)", listing.group(0)):
        if name in database_only:
            if f"`{name}` (with `--database`" not in listing.group(0):
                raise Failure(f"README.md no longer says {name} is served with --database")
            continue
        if name not in metrics:
            raise Failure(f"the README names {name}, which /metrics does not serve:\n{metrics}")
    run.stop(server)


def revoke_as_root(run, commands, users):
    """The README's revoke as an operator does it: as root, against a server
    running as another user (nobody stands for simpletunnel), then a reload."""
    pid = os.getpid()
    programs, runtime, state = (f"/tmp/st-readme-{what}-{pid}" for what in ("programs", "run", "state"))
    try:
        # Where nobody can reach: the build folder may sit below one only root can enter.
        os.makedirs(programs, mode=0o755)
        os.chmod(programs, 0o755)
        shutil.copy(shutil.which("tunnel-server", path=run.environment["PATH"]), programs)
        os.chmod(f"{programs}/tunnel-server", 0o755)
        for folder in (runtime, state):
            os.makedirs(folder, mode=0o700)
            os.chown(folder, 65534, 65534)
        # Its users file is below the work folder (for /etc/simpletunnel): nobody must get through to it, as to /etc.
        os.chmod(run.work, 0o711)
        os.chmod(f"{run.work}/etc", 0o711)
        bob = command("sudo tunnel-server passwd alice", commands).replace("alice", "bob", 1)
        run.shell(run.adapt(bob, users + [("--owner simpletunnel", "--owner nobody")]), stdin=PASSWORD + "\n")
        control = f"{runtime}/server.sock"
        server, _ = run.start(
            f"setpriv --reuid nobody --regid {grp.getgrgid(65534).gr_name} --clear-groups {programs}/tunnel-server --host 127.0.0.1 --port 4434 "
            f"--users {run.work}/etc/simpletunnel/users --state-directory {state} --control {control}",
            lambda log: "listening on 127.0.0.1:4434" in log, "service-user-server")
        # The README's two lines, as written, as root.
        run.shell(run.adapt(command("sudo tunnel-server passwd bob --remove", commands), users))
        file = os.stat(f"{run.work}/etc/simpletunnel/users")
        if file.st_uid != 65534:
            raise Failure(f"passwd --remove, run as root, made the users file uid {file.st_uid}'s: the server cannot read it")
        reload_line = command("sudo systemctl reload tunnel-server", commands)
        alternative = re.search(r"#\s*or:\s*(.+)$", [c for c in readme_commands() if c.startswith(reload_line)][0])
        if not alternative:
            raise Failure("README.md's reload line no longer names `tunnel-server reload` as the alternative")
        said = run.shell(run.adapt(alternative.group(1).strip(), []) + f" --control {control}")
        if 'removed="bob"' not in said or "NOT RELOADED" in said:
            raise Failure(f"the reload after revoking bob said: {said}")
        run.stop(server)
    finally:
        for folder in (programs, runtime, state):
            shutil.rmtree(folder, ignore_errors=True)


def several_servers(run, commands):
    """Several servers: the database's role and grants, passwd --database, a server with --database, a client's login."""
    initdb = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not initdb:
        raise Failure("PostgreSQL is not installed (apt-get install postgresql)")
    binaries = os.path.dirname(initdb[-1])
    cluster = tempfile.mkdtemp(prefix="readme-postgres-")
    shutil.chown(cluster, "postgres", "postgres")
    as_postgres = ["runuser", "-u", "postgres", "--"]

    def postgres(*arguments):
        subprocess.run(as_postgres + [f"{binaries}/{arguments[0]}", *arguments[1:]], cwd="/", check=True, capture_output=True)

    postgres("initdb", "-D", f"{cluster}/data", "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")
    postgres("pg_ctl", "-D", f"{cluster}/data", "-l", f"{cluster}/log", "-w", "-t", "60",
             "-o", f"-k {cluster} -c listen_addresses=127.0.0.1 -p 5432 -c fsync=off", "start")
    try:
        cluster_env = {"PGHOST": cluster, "PGPORT": "5432"}

        def as_admin(text):
            return text.replace("sudo -u postgres ", "runuser -u postgres -- ", 1)

        install = command("sudo install -m 600 /dev/stdin /etc/simpletunnel/db-password", commands)
        secret = re.search(r"<<< '([^']*)'", install)
        if not secret:
            raise Failure(f"the README's password file line gives no password: {install}")
        run.shell(as_admin(command("sudo -u postgres createuser --pwprompt tunnel", commands)),
                  stdin=f"{secret.group(1)}\n{secret.group(1)}\n", extra=cluster_env)
        run.shell(as_admin(command("sudo -u postgres createdb", commands)), extra=cluster_env)
        run.shell(as_admin(command("sudo -u postgres psql -d tunnel", commands)), extra=cluster_env)
        etc = [("/etc/simpletunnel", f"{run.work}/etc/simpletunnel")]
        os.makedirs(f"{run.work}/etc/simpletunnel", exist_ok=True)
        run.shell(run.adapt(install, etc))
        address = re.fullmatch(r"DB=(\S+)", command("DB=", commands))
        if not address:
            raise Failure("the README's several-servers block sets no DB=ADDRESS")
        database = [("$DB", address.group(1))]
        said = run.shell(run.adapt(command("tunnel-server passwd alice --database", commands), database + etc), stdin=PASSWORD + "\n")
        if "saved" not in said:
            raise Failure(f"passwd --database did not save alice: {said}")
        server, _ = run.start(run.adapt(command("sudo tunnel-server --host 0.0.0.0 --config server.plist", commands), database + etc),
                              lambda log: "listening on 0.0.0.0:4433" in log, "database-server")
        configuration = run.shell("tunnel-client config --server vpn.example.com:4433 --ca ca.pem --user alice --once",
                                  extra={"SIMPLETUNNEL_PASSWORD": PASSWORD})
        json.loads(configuration)
        run.stop(server)
    finally:
        subprocess.run(as_postgres + [f"{binaries}/pg_ctl", "-D", f"{cluster}/data", "-w", "-m", "immediate", "stop"],
                       cwd="/", capture_output=True)
        shutil.rmtree(cluster, ignore_errors=True)


def inside():
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    for program in ("tunnel-server", "tunnel-client"):
        if not os.access(f"{bin_path}/{program}", os.X_OK):
            sys.exit(f"readme: {bin_path}/{program} is missing; run `swift build` first")
    commands = readme_commands()
    eventually(lambda: http_reachable("10.0.0.80", 80), "the HTTP server behind the namespace")
    work = tempfile.mkdtemp(prefix="readme-")
    run = Run(work, bin_path)
    try:
        for part in (first_run, certificates_and_vpn, logins_and_metrics, several_servers):
            print(f"== {part.__doc__.splitlines()[0]}", flush=True)
            part(run, commands)
    except (Failure, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
        run.stop_all()
        sys.exit(f"readme: FAILED: {error}")
    finally:
        run.stop_all()
        subprocess.run(["rm", "-rf", work])
    print("readme: every command run here worked as written")


def serve_destinations():
    """In the destinations' namespace: serve until killed."""
    destinations()
    threading.Event().wait()


if __name__ == "__main__":
    if sys.argv[1:] == ["--inside"]:
        inside()
    elif sys.argv[1:] == ["--destinations"]:
        serve_destinations()
    else:
        outside()
