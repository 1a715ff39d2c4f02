import Testing
@testable import SimpleTunnelServices

@Suite("IP tunnel in network namespaces: the destination policy", .serialized, .timeLimit(.minutes(3)))
struct IPPolicyNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aDeniedDestinationGetsNoPacketsWhileItsNeighbourDoes() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        // A second address on the destination: the same host, one denied and one not.
        try vpn.lab.run(in: vpn.destination, ["ip", "addr", "add", "198.18.2.3/24", "dev", "to-srv"])
        try await vpn.startServer(arguments: ["--deny", "198.18.2.3"])
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")

        let allowed = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(allowed.status == 0, "ping failed: \(allowed.standardOutput)\n\(process.outputSoFar)")
        let denied = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "198.18.2.3"], check: false)
        #expect(denied.status != 0, "\(denied.standardOutput)")
        let serverLog = await vpn.serverProcess?.waitForOutput(containing: "whose destination the policy refuses", timeout: 10)
        #expect(serverLog != nil, "the server did not report the dropped packets")
        // It listens on 0.0.0.0: the start log says the public default applies.
        #expect(vpn.serverProcess?.outputSoFar.contains("may not reach this machine's own addresses") == true)
    }

    /// Sends TCP SYNs from the client's lease out of its TUN device, each
    /// behind some destination-options headers: arguments `DEVICE DEST,PORT,HEADERS ...`.
    static let sendSYNs = """
        import socket, struct, sys
        source = socket.inet_pton(socket.AF_INET6, "fd00:90::2")
        out = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)
        for spec in sys.argv[2:]:
            destination, port, count = spec.split(",")
            count = int(count)
            syn = struct.pack("!HHIIBBHHH", 40000, int(port), 1, 0, 5 << 4, 0x02, 65535, 0, 0)
            # Each header: the next one, length 0, and a PadN option filling its 8 bytes.
            headers = b"".join(bytes([60 if i < count - 1 else 6, 0, 1, 4, 0, 0, 0, 0]) for i in range(count))
            payload = headers + syn
            fixed = struct.pack("!IHBB", 6 << 28, len(payload), 60 if count else 6, 64)
            out.sendto(fixed + source + socket.inet_pton(socket.AF_INET6, destination) + payload, (sys.argv[1], 0x86DD))
        print("sent", flush=True)
        """

    /// Prints `DEST PORT HEADERS` for every TCP packet from the client's lease that reaches the destination's link.
    static let captureSYNs = """
        import socket
        capture = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x86DD))
        capture.bind(("to-srv", 0x86DD))
        print("capturing", flush=True)
        while True:
            packet = capture.recv(65535)
            if len(packet) < 40 or packet[8:24] != socket.inet_pton(socket.AF_INET6, "fd00:90::2"):
                continue
            following, offset, count = packet[6], 40, 0
            while following == 60 and offset + 2 <= len(packet):
                following, offset, count = packet[offset], offset + (packet[offset + 1] + 1) * 8, count + 1
            if following == 6 and offset + 4 <= len(packet):
                port = int.from_bytes(packet[offset + 2:offset + 4], "big")
                print(socket.inet_ntop(socket.AF_INET6, packet[24:40]), port, count, flush=True)
        """

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"))
    func aSYNHidingItsPortBehindNineOrMoreHeadersDoesNotPassADenyRuleForThatPort() async throws {
        let vpn = try VPNLab(dualStack: true)
        defer { vpn.cleanup() }
        // A second address on the destination that no port rule covers.
        try vpn.lab.run(in: vpn.destination, ["ip", "-6", "addr", "add", "fd00:2::3/64", "dev", "to-srv", "nodad"])
        try await vpn.startServer(arguments: ["--deny", "[fd00:2::2]:22"])
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, index: 1, device: "stun1")
        let capture = try vpn.lab.start(in: vpn.destination, ["python3", "-u", "-c", Self.captureSYNs])
        #expect(await capture.waitForOutput(containing: "capturing", timeout: 10) != nil, "\(capture.outputSoFar)")

        // Hidden ports to the denied one first: the tunnel keeps the order, so once the
        // later SYNs arrive, any of these that got through would have arrived too.
        let hidden = ["fd00:2::2,22,9", "fd00:2::2,22,10", "fd00:2::2,22,20", "fd00:2::2,22,0"]
        let passing = ["fd00:2::2,80,1", "fd00:2::3,22,9", "fd00:2::3,80,12"]
        let sent = try vpn.lab.run(in: client, ["python3", "-c", Self.sendSYNs, "stun1"] + hidden + passing, check: false)
        #expect(sent.standardOutput.contains("sent"), "\(sent.standardOutput)\(sent.standardError)")
        for expected in ["fd00:2::2 80 1", "fd00:2::3 22 9", "fd00:2::3 80 12"] {
            let arrived = await capture.waitForOutput(containing: expected, timeout: 10)
            #expect(arrived != nil, "\(expected) did not arrive: \(capture.outputSoFar)\n\(process.outputSoFar)")
        }
        #expect(!capture.outputSoFar.contains("fd00:2::2 22 "), "a SYN to the denied port got through:\n\(capture.outputSoFar)")
        let serverLog = await vpn.serverProcess?.waitForOutput(containing: "whose port could not be found", timeout: 10)
        #expect(serverLog != nil, "the server did not report the dropped packets:\n\(vpn.serverProcess?.outputSoFar ?? "")")
    }
}

@Suite("IP tunnel in network namespaces: clients and one another", .serialized, .timeLimit(.minutes(3)))
struct ClientIsolationNamespaceTests {
    /// Two clients up; whether the first pings the second's lease.
    static func firstReachesSecond(serverArguments: [String]) async throws -> Bool {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(arguments: serverArguments)
        let first = try vpn.clientNamespace(1)
        let second = try vpn.clientNamespace(2)
        // Everything through the tunnel would loop here; the other lease's /32 is the route to test.
        _ = try await vpn.startClient(in: first, serverAddress: "198.18.11.1", device: "stun1")
        _ = try await vpn.startClient(in: second, serverAddress: "198.18.12.1", device: "stun2")
        try vpn.lab.run(in: first, ["ip", "route", "add", "10.90.0.3/32", "dev", "stun1"])
        try vpn.lab.run(in: second, ["ip", "route", "add", "10.90.0.2/32", "dev", "stun2"])
        let ping = try vpn.lab.run(in: first, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "10.90.0.3"], check: false)
        // The destination behind the server stays reachable either way.
        let behind = try vpn.lab.run(in: first, ["ping", "-c", "1", "-W", "2", "198.18.2.2"], check: false)
        #expect(behind.status == 0, "\(behind.standardOutput)")
        return ping.status == 0
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func byDefaultAClientCannotReachAnothersLease() async throws {
        #expect(try await !Self.firstReachesSecond(serverArguments: []))
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func clientToClientLetsThemTalk() async throws {
        #expect(try await Self.firstReachesSecond(serverArguments: ["--client-to-client"]))
    }
}
