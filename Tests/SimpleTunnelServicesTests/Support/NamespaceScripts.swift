/// Small independent peers, run with `python3 -c` inside a namespace.
enum NamespaceScripts {
    /// Apple's stock app proxy, by hand: plain TCP, a length-prefixed binary
    /// plist `open` for a TCP flow (port as a string), then an HTTP request on
    /// the flow. Arguments: server, port, source address, target, target port.
    /// Prints "closed unanswered" when the server closes without a reply,
    /// else "open result N" and the first bytes of the answer.
    static let sampleAppPeer = """
    import plistlib, socket, struct, sys
    server, port, source, target, target_port = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    def frame(message):
        body = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
        return struct.pack("<I", len(body) + 4) + body
    def receive(sock, count):
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                return None
            data += chunk
        return data
    def message(sock):
        head = receive(sock, 4)
        body = head and receive(sock, struct.unpack("<I", head)[0] - 4)
        return plistlib.loads(body) if body else None
    try:
        sock = socket.create_connection((server, port), timeout=10, source_address=(source, 0))
        sock.sendall(frame({"identifier": 7, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": target, "port": target_port}))
        reply = message(sock)
    except (ConnectionResetError, BrokenPipeError):
        reply = None
    except socket.timeout:
        print("no answer and not closed")
        sys.exit(1)
    if reply is None:
        print("closed unanswered")
        sys.exit(0)
    print("open result", reply.get("result-code"))
    sock.sendall(frame({"identifier": 7, "command": 1, "data": b"GET / HTTP/1.0\\r\\n\\r\\n"}))
    answer = b""
    while b"\\r\\n" not in answer:
        reply = message(sock)
        if reply is None:
            break
        if reply.get("command") == 1:
            answer += reply.get("data", b"")
    print("answer", answer.split(b"\\r\\n")[0].decode(errors="replace"))
    """

    /// `ping -c 1` for machines without iputils: one ICMP echo over a raw
    /// socket. Arguments: address, timeout seconds. Exit 0 on a reply.
    static let ping = """
    import os, socket, struct, sys, time
    def checksum(data):
        if len(data) % 2: data += b"\\0"
        total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
        total = (total >> 16) + (total & 0xFFFF)
        total += total >> 16
        return ~total & 0xFFFF
    target, timeout = sys.argv[1], float(sys.argv[2])
    ident = os.getpid() & 0xFFFF
    payload = b"simpletunnel-ping"
    header = struct.pack("!BBHHH", 8, 0, 0, ident, 1)
    packet = struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, 1) + payload
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.sendto(packet, (target, 0))
    deadline = time.time() + timeout
    while time.time() < deadline:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            data, peer = sock.recvfrom(65535)
        except socket.timeout:
            break
        start = (data[0] & 0x0F) * 4
        kind, _, _, reply_ident, _ = struct.unpack("!BBHHH", data[start:start + 8])
        if kind == 0 and reply_ident == ident and peer[0] == target:
            print("reply from", target)
            sys.exit(0)
    print("no reply from", target)
    sys.exit(1)
    """

    /// Counts UDP datagrams. Arguments: bind address, port, expected count.
    /// Prints "ready", then "sizes N N ..." once the count arrived (or after
    /// 10 s), having waited a moment longer for any extra datagram.
    static let udpCounter = """
    import socket, sys
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((sys.argv[1], int(sys.argv[2])))
    expected = int(sys.argv[3])
    sock.settimeout(10)
    print("ready", flush=True)
    sizes = []
    try:
        while len(sizes) < expected:
            sizes.append(len(sock.recv(65535)))
        sock.settimeout(0.3)
        while True:
            sizes.append(len(sock.recv(65535)))
    except socket.timeout:
        pass
    print("sizes", " ".join(map(str, sizes)), flush=True)
    """

    /// Sends UDP datagrams as fast as it can. Arguments: address, port,
    /// count, first payload size, size step. Datagram i carries byte i.
    static let udpSender = """
    import socket, sys
    target, port, count, first, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for index in range(count):
        sock.sendto(bytes([index % 256]) * (first + index * step), (target, port))
    print("sent", count, flush=True)
    """

    /// Receives one TCP connection to its end. Arguments: bind address, port.
    /// Prints "ready", then "received BYTES SHA256".
    static let tcpSink = """
    import hashlib, socket, sys
    family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((sys.argv[1], int(sys.argv[2])))
    server.listen(1)
    server.settimeout(30)
    print("ready", flush=True)
    connection, _ = server.accept()
    connection.settimeout(30)
    digest, count = hashlib.sha256(), 0
    while True:
        data = connection.recv(1 << 20)
        if not data:
            break
        digest.update(data)
        count += len(data)
    print("received", count, digest.hexdigest(), flush=True)
    """

    /// Sends random bytes over one TCP connection. Arguments: address, port,
    /// byte count. Prints "sent BYTES SHA256".
    static let tcpSource = """
    import hashlib, os, socket, sys
    data = os.urandom(int(sys.argv[3]))
    connection = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
    connection.sendall(data)
    connection.close()
    print("sent", len(data), hashlib.sha256(data).hexdigest(), flush=True)
    """

    /// Sends COUNT datagrams of SIZE bytes in one `sendto` with UDP_SEGMENT
    /// (the kernel's UDP GSO, as QUIC stacks send). Arguments: address, port,
    /// size, count. Prints "sent BYTES SHA256" of all the payload.
    static let udpSegmentSource = """
    import hashlib, os, socket, sys
    address, port, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_UDP, 103, size)  # UDP_SEGMENT
    data = os.urandom(size * count)
    sock.sendto(data, (address, port))
    print("sent", len(data), hashlib.sha256(data).hexdigest(), flush=True)
    """

    /// Receives COUNT datagrams. Arguments: bind address, port, count. Prints
    /// "ready", then "received BYTES SHA256" of their payloads in order, and
    /// "sizes" with each datagram's size.
    static let udpSink = """
    import hashlib, socket, sys
    address, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, port))
    sock.settimeout(20)
    print("ready", flush=True)
    digest, total, sizes = hashlib.sha256(), 0, []
    try:
        while len(sizes) < count:
            data = sock.recv(65535)
            digest.update(data)
            total += len(data)
            sizes.append(len(data))
    except socket.timeout:
        pass
    print("received", total, digest.hexdigest(), flush=True)
    print("sizes", " ".join(map(str, sizes)), flush=True)
    """
}
