import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Our server against a peer that behaves as the app proxy of Apple's
/// SimpleTunnel sample does, and our client against one that behaves as its
/// tunnel_server does (Tests/AppleSamplePeers: each behaviour cites the
/// sample's file and line it imitates).
@Suite("Apple's sample as the peer", .enabled(if: AppleSamplePeers.available, "needs python3"), .timeLimit(.minutes(3)))
struct AppleSamplePeerTests {
    // MARK: The sample's app proxy against our server

    @Test func itsTCPFlowWithIntegerPortAndThirtyTwoKiBPiecesEchoesEveryByte() async throws {
        let fixture = try await RawServerFixture.start()
        let report = try await AppleSamplePeers.client(
            port: fixture.port, "transfer", ["--destination", "\(fixture.echoPort)", "--bytes", "\(3 * 1024 * 1024 + 17)"])
        #expect(report["openResult"] as? Int == 0)
        #expect(report["received"] as? Int == report["sent"] as? Int)
        #expect(report["receivedSHA256"] as? String == report["sentSHA256"] as? String)
        // The echo's FIN after the sample's close 3 comes back as close 3.
        #expect(report["closeType"] as? Int == 3)
        await fixture.stop()
    }

    /// A peer that ignores `suspend` (as the sample does) is held back by TCP,
    /// never cut off: 64 MiB reach a destination that reads slowly, intact, and
    /// what the server holds for it stays within the allowance past `suspend`.
    @Test func itIgnoresSuspendYetEveryByteOfSixtyFourMiBReachesASlowDestination() async throws {
        let budget = ServerBufferBudget(limit: 256 * 1024 * 1024)
        let perFlow = 1024 * 1024
        let fixture = try await RawServerFixture.start { settings in
            settings.bufferBudget = budget
            settings.multiplexerLimits.suspendAllowance = perFlow
            settings.multiplexerLimits.tunnelSuspendAllowance = 4 * perFlow
        }
        let received = fixture.group.next().makePromise(of: SlowReader.Received.self)
        let destination = try await SlowReader.listen(interval: .milliseconds(1), readSize: 32 * 1024, done: received, group: fixture.group)
        let peak = BudgetPeak(budget)
        let count = 64 * 1024 * 1024
        let report = try await AppleSamplePeers.client(
            port: fixture.port, "transfer",
            ["--destination", "\(destination.localAddress?.port ?? 0)", "--bytes", "\(count)", "--timeout", "150"], timeout: 170)
        let delivered = try await received.futureResult.get()
        #expect(report["openResult"] as? Int == 0)
        #expect((report["suspendsIgnored"] as? Int ?? 0) > 0, "the destination never fell behind: the test proves nothing")
        #expect(delivered.count == count)
        #expect(delivered.sha256 == report["sentSHA256"] as? String)
        #expect(report["closeType"] as? Int == 3, "the flow ended some other way than the destination's FIN")
        #expect(report["tunnelOpen"] as? Bool == true)
        // Past its allowance the server read no further: at most the allowance
        // plus what the read under way had brought in (NIO reads a socket up to
        // 4 times per event, 256 KiB each for a tunnel) and a frame.
        let held = peak.stop()
        #expect(held > 0)
        #expect(held <= perFlow + 1024 * 1024 + 128 * 1024, "the server held \(held) bytes past suspend for one flow")
        try? await destination.close()
        await fixture.stop()
    }

    /// The sample names flows by `flow.hash` and forgets a flow at the first
    /// close it receives, so it may open the same identifier while our side
    /// of the old flow is still draining; the new flow starts clean.
    @Test func itReusesAFlowHashWhileTheOldFlowIsStillOpenOnOurSide() async throws {
        let fixture = try await RawServerFixture.start()
        let speakerReceived = NIOLockedValueBox<Int?>(nil)
        let speaker = try await DestinationServers.speaker(greeting: ByteBuffer(string: "hello"), received: speakerReceived, group: fixture.group)
        let report = try await AppleSamplePeers.client(
            port: fixture.port, "reuse", ["--speaker", "\(speaker.localAddress?.port ?? 0)", "--destination", "\(fixture.echoPort)"])
        #expect(report["firstOpenResult"] as? Int == 0)
        #expect(report["greeting"] as? String == "hello")
        #expect(report["firstCloseType"] as? Int == 3)
        #expect(report["secondOpenResult"] as? Int == 0, "a new open of a reused flow.hash was refused")
        #expect(report["secondFlowReceived"] as? String == "second flow")
        #expect(report["secondCloseType"] as? Int == 3)
        try? await speaker.close()
        await fixture.stop()
    }

    @Test func itsOpenWithIdentifierZeroGetsResultOneAndTheTunnelGoesOn() async throws {
        let fixture = try await RawServerFixture.start()
        let report = try await AppleSamplePeers.client(port: fixture.port, "open-zero", ["--destination", "\(fixture.echoPort)"])
        #expect(report["openResult"] as? Int == 1)
        #expect(report["tunnelStillAnswers"] as? Bool == true)
        await fixture.stop()
    }

    @Test func itsCloseFourAfterARefusedOpenChangesNothing() async throws {
        let fixture = try await RawServerFixture.start()
        let closed = try await DestinationServers.closedPort(group: fixture.group)
        let report = try await AppleSamplePeers.client(port: fixture.port, "failed-open", ["--destination", "\(closed)"])
        #expect(report["configuration"] as? Bool == true, "no answer to the sample's fetchConfiguration")
        #expect(report["openResult"] as? Int == 3)
        #expect(report["tunnelStillAnswers"] as? Bool == true)
        await fixture.stop()
    }

    @Test func itsCloseTwoStopsWhatTheServerSendsForTheFlow() async throws {
        let fixture = try await RawServerFixture.start()
        let report = try await AppleSamplePeers.client(port: fixture.port, "write-error", ["--destination", "\(fixture.echoPort)"])
        #expect(report["openResult"] as? Int == 0)
        #expect(report["messageAfterCloseRead"] as? Bool == false, "the server sent for a flow whose reader had failed")
        #expect(report["tunnelStillAnswers"] as? Bool == true)
        await fixture.stop()
    }

    /// The sample's packet tunnel: an IP open under an arc4random() identifier,
    /// then `packets` with `protocols` both ways. A dual-stack server answers
    /// with an IPv6 dictionary too, which the sample ignores: its IPv4 tunnel works as before.
    @Test(arguments: [false, true])
    func itsPacketTunnelGetsALeaseAndCarriesPacketsBothWays(dualStack: Bool) async throws {
        let pool6 = try #require(IPv6Address("fd00:90::2"))...(try #require(IPv6Address("fd00:90::ff")))
        let (fixture, device, layer) = try await IPLayerTests.start(ipv6Pool: dualStack ? pool6 : nil)
        let sample = try AppleSamplePeers.startClient(port: fixture.port, "packet-tunnel", ["--destination", "198.18.2.2", "--count", "5", "--expect", "3"])
        defer { sample.terminate() }
        // Its packets reach the device once the lease is made...
        #expect(await Loopback.waitUntil(seconds: 30) { device.written.count >= 5 })
        #expect(device.written.allSatisfy { $0.getInteger(at: 12, as: UInt32.self) == IPv4Address("10.90.0.2")?.rawValue })
        // ...and packets for the lease go back to it.
        device.inject((0..<3).map { ipv4Packet(from: "198.18.2.2", to: "10.90.0.2", payload: $0) })
        let report = try await AppleSamplePeers.report(of: sample, "packet-tunnel")
        #expect(report["openResult"] as? Int == 0)
        #expect(report["address"] as? String == "10.90.0.2")
        #expect(report["received"] as? Int == 3)
        #expect(report["receivedProtocols"] as? [Int] == [2])
        #expect(layer.router.counters.spoofedDropped == 0 && layer.router.counters.linkScopedDropped == 0)
        await fixture.stop()
    }

    // MARK: Our client against the sample's tunnel_server

    /// The sample's server reads `port` only as a number and never sends
    /// anything unasked; our client's forward works through it.
    @Test func ourForwardCarriesBytesThroughTheSampleServer() async throws {
        let (server, port) = try await AppleSamplePeers.server()
        defer { server.terminate() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = try await TunnelClientConnection.connect(
            settings: .init(host: "127.0.0.1", port: port, tls: nil), group: group, logger: TunnelFixture.logger)
        let received = group.next().makePromise(of: ByteBuffer.self)
        // A test that fails must not wait forever (a second completion is a no-op).
        group.next().scheduleTask(in: .seconds(60)) { received.fail(ChannelError.connectTimeout(.seconds(60))) }
        let started = NIOLockedValueBox(false)
        let destination = try await LateReader.listen(delay: .milliseconds(1), received: received, started: started, group: group)
        let echo = try await LoopbackPeers.echoServer(group: group)
        let forward = try await TCPPortForwarder.start(
            bindHost: "127.0.0.1", bindPort: 0, destination: TunnelEndpoint(host: "127.0.0.1", port: destination.localAddress?.port ?? 0),
            tunnel: client, logger: TunnelFixture.logger)

        // Upstream: the sample's server writes what waits, then closes the destination at our close.
        let payload = LoopbackPeers.payload(2 * 1024 * 1024)
        let application = try await ClientBootstrap(group: group)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(host: "127.0.0.1", port: forward.localAddress.port ?? 0)
            .get()
        try await application.writeAndFlush(payload)
        try await application.close(mode: .output)
        let delivered = try await received.futureResult.get()
        #expect(delivered == payload, "\(server.outputSoFar)")
        try? await application.close()

        // Both ways, for as long as nobody half-closes (the sample's server ends a flow at any close).
        let echoForward = try await TCPPortForwarder.start(
            bindHost: "127.0.0.1", bindPort: 0, destination: TunnelEndpoint(host: "127.0.0.1", port: echo.localAddress?.port ?? 0),
            tunnel: client, logger: TunnelFixture.logger)
        let reply = try await LoopbackPeers.firstBytes(ByteBuffer(string: "ping"), port: echoForward.localAddress.port ?? 0, group: group)
        #expect(reply == ByteBuffer(string: "ping"))

        await forward.close()
        await echoForward.close()
        try? await destination.close()
        try? await echo.close()
        await client.close()
        try? await group.shutdownGracefully()
    }
}
