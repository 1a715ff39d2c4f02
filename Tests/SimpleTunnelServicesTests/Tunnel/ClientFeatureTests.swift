import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Client features end to end", .timeLimit(.minutes(2)))
struct ClientFeatureTests {
    @Test func fiveHundredConcurrentFlowsKeepTheirOwnBytes() async throws {
        let fixture = try await TunnelFixture.start()
        let forwarder = try await fixture.forward()
        let port = forwarder.localAddress.port ?? 0
        let group = fixture.group
        let mismatches = try await withThrowingTaskGroup(of: Bool.self) { tasks in
            for flow in 0..<500 {
                tasks.addTask {
                    let payload = LoopbackPeers.payload(1000 + flow * 37, seed: UInt8(truncatingIfNeeded: flow))
                    return try await LoopbackPeers.exchange(payload, port: port, group: group) == payload
                }
            }
            var mismatches = 0
            for try await matched in tasks where !matched {
                mismatches += 1
            }
            return mismatches
        }
        #expect(mismatches == 0)
        // Every flow ended on both sides and was forgotten.
        var open = -1
        for _ in 0..<200 where open != 0 {
            try await Task.sleep(for: .milliseconds(20))
            open = try await fixture.client.statistics().openFlows
        }
        #expect(open == 0)
        await forwarder.close()
        await fixture.stop()
    }

    @Test func destinationHalfCloseReachesTheApplicationWhichCanStillSend() async throws {
        let fixture = try await TunnelFixture.start()
        let received = NIOLockedValueBox<Int?>(nil)
        let speaker = try await DestinationServers.speaker(greeting: ByteBuffer(string: "greetings"), received: received, group: fixture.group)
        let forwarder = try await fixture.forward(to: speaker.localAddress?.port)
        let payload = LoopbackPeers.payload(500_000)
        let answer = try await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group)
        #expect(answer == ByteBuffer(string: "greetings"))
        var count: Int?
        for _ in 0..<400 where count == nil {
            try await Task.sleep(for: .milliseconds(25))
            count = received.withLockedValue { $0 }
        }
        #expect(count == 500_000)
        try? await speaker.close()
        await fixture.stop()
    }

    @Test func udpForwardCarriesDatagramsBothWays() async throws {
        let fixture = try await TunnelFixture.start()
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let forwarder = try await UDPPortForwarder.start(
            bindHost: "127.0.0.1", bindPort: 0,
            destination: TunnelEndpoint(host: "127.0.0.1", port: echo.localAddress?.port ?? 0),
            tunnel: fixture.client, logger: TunnelFixture.logger
        )
        let port = forwarder.localAddress.port ?? 0
        for size in [1, 1200, 60_000] {
            let payload = LoopbackPeers.payload(size)
            #expect(try await LoopbackPeers.udpRoundTrip(payload, port: port, group: fixture.group) == payload)
        }
        // A second source gets its own flow.
        #expect(try await LoopbackPeers.udpRoundTrip(ByteBuffer(string: "other"), port: port, group: fixture.group) == ByteBuffer(string: "other"))
        await forwarder.close()
        try? await echo.close()
        await fixture.stop()
    }

    @Test func oneSlowReaderDoesNotStallOtherFlowsAndIsHeldBack() async throws {
        let fixture = try await TunnelFixture.start()
        let source = try await DestinationServers.source(count: 256 * 1024 * 1024, group: fixture.group)
        let bulk = try await fixture.forward(to: source.localAddress?.port)
        let interactive = try await fixture.forward()

        // An application that connects to the bulk flow and never reads.
        let stalled = try await ClientBootstrap(group: fixture.group)
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.so_rcvbuf), value: 64 * 1024)
            .connect(host: "127.0.0.1", port: bulk.localAddress.port ?? 0)
            .get()
        // Held back: the bytes the client has taken from the tunnel stop growing (waited for, not slept on).
        var taken: UInt64? = nil
        for _ in 0..<200 {
            let now = try await fixture.client.statistics().bytesFromPeer
            if now > 0, now == taken { break }
            taken = now
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect((taken ?? 0) > 0, "the bulk flow never started")

        // Meanwhile other flows work.
        for round in 0..<5 {
            let payload = LoopbackPeers.payload(100_000, seed: UInt8(round))
            #expect(try await LoopbackPeers.exchange(payload, port: interactive.localAddress.port ?? 0, group: fixture.group) == payload)
        }
        // The bulk flow was suspended: the client holds a bounded amount, not the 256 MiB on offer.
        let first = try await fixture.client.statistics().bytesFromPeer
        try await Task.sleep(for: .milliseconds(500))
        let second = try await fixture.client.statistics().bytesFromPeer
        #expect(second < 16 * 1024 * 1024, "the client took \(second) bytes for an application that reads nothing")
        #expect(second - first < 1024 * 1024, "the stalled flow kept flowing")
        try? await stalled.close()
        try? await source.close()
        await fixture.stop()
    }

    @Test func socksConnectCarriesCurlToALocalWebServer() async throws {
        let fixture = try await TunnelFixture.start()
        let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: fixture.client, logger: TunnelFixture.logger)
        let web = try ExternalProcess(
            ["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", RepositoryPaths.fixtures.path],
            standardInput: .silent)
        defer { web.terminate() }
        let banner = try #require(await web.waitForOutput(containing: "port "))
        let webPort = try #require(banner.split(separator: " ").drop { $0 != "port" }.dropFirst().first.flatMap { Int($0) })
        let curl = try ExternalProcess([
            "curl", "-s", "--max-time", "20", "--socks5-hostname", "127.0.0.1:\(proxy.localAddress.port ?? 0)",
            "http://localhost:\(webPort)/README.md",
        ])
        let result = await curl.finish()
        let expected = try String(contentsOf: RepositoryPaths.fixtures.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(result.status == 0)
        #expect(result.output == expected)
        await proxy.close()
        await fixture.stop()
    }

    @Test func socksUDPAssociateCarriesDatagrams() async throws {
        let fixture = try await TunnelFixture.start()
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: fixture.client, logger: TunnelFixture.logger)
        // A SOCKS5 UDP client written against RFC 1928, independent of our code.
        let script = """
            import socket, struct, sys
            proxy, target = int(sys.argv[1]), int(sys.argv[2])
            tcp = socket.create_connection(("127.0.0.1", proxy), timeout=10)
            tcp.sendall(b"\\x05\\x01\\x00"); assert tcp.recv(2) == b"\\x05\\x00"
            tcp.sendall(b"\\x05\\x03\\x00\\x01" + bytes(4) + bytes(2))
            reply = tcp.recv(10); assert reply[1] == 0, reply
            relay = (socket.inet_ntoa(reply[4:8]), struct.unpack("!H", reply[8:10])[0])
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.settimeout(10)
            for payload in (b"ping", bytes(range(256)) * 40):
                udp.sendto(b"\\x00\\x00\\x00\\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", target) + payload, relay)
                data, _ = udp.recvfrom(70000)
                assert data[3] == 1 and struct.unpack("!H", data[8:10])[0] == target, data[:10]
                assert data[10:] == payload, len(data)
            print("ok")
            """
        let client = try ExternalProcess(["python3", "-c", script, "\(proxy.localAddress.port ?? 0)", "\(echo.localAddress?.port ?? 0)"])
        let result = await client.finish()
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(result.output)")
        await proxy.close()
        try? await echo.close()
        await fixture.stop()
    }
}
