import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

#if canImport(Glibc)
import Glibc
#endif

@Suite("Dead-peer detection", .timeLimit(.minutes(2)))
struct LivenessTests {
    @Test func aClientProbesAndMeasuresTheRoundTripAndGivesUpOnSilence() {
        let policy = LivenessMonitor.Policy(probeInterval: .seconds(15), probeTimeout: .seconds(45))
        let start = NIODeadline.now()
        var monitor = LivenessMonitor(policy: policy, now: start)
        #expect(monitor.tick(at: start + .seconds(14)) == .nothing)
        #expect(monitor.tick(at: start + .seconds(15)) == .sendProbe)
        #expect(monitor.tick(at: start + .seconds(20)) == .nothing, "one probe at a time")
        monitor.probeAnswered(at: start + .milliseconds(15_250))
        #expect(monitor.roundTrip == .milliseconds(250))
        #expect(monitor.tick(at: start + .seconds(30)) == .sendProbe)
        guard case .peerDead = monitor.tick(at: start + .seconds(76)) else {
            Issue.record("an unanswered probe must declare the peer dead")
            return
        }
    }

    @Test func aServerClosesATunnelSilentForItsIdleTimeout() {
        let start = NIODeadline.now()
        var monitor = LivenessMonitor(policy: .init(idleTimeout: .seconds(60)), now: start)
        monitor.heard(at: start + .seconds(50))
        #expect(monitor.tick(at: start + .seconds(100)) == .nothing)
        guard case .peerDead = monitor.tick(at: start + .seconds(111)) else {
            Issue.record("a silent peer must be dropped")
            return
        }
    }

    @Test func aServerNeverCountsSilenceWhileTheTunnelHoldsAFlow() {
        let start = NIODeadline.now()
        var monitor = LivenessMonitor(policy: .init(idleTimeout: .seconds(60)), now: start)
        #expect(monitor.tick(at: start + .seconds(3600), holdsFlows: true) == .nothing)
        // The last flow ended at +3600 s: silence counts from then.
        #expect(monitor.tick(at: start + .seconds(3650), holdsFlows: false) == .nothing)
        guard case .peerDead = monitor.tick(at: start + .seconds(3661), holdsFlows: false) else {
            Issue.record("a silent peer with no flow must be dropped")
            return
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aQuietFlowOutlivesTheIdleTimeout() async throws {
        // The flow must be open before the tunnel, with no flow yet, counts as idle. A machine
        // stalled for longer than that (the whole suite starting at once) proves nothing either
        // way, so the set-up is tried again, at most three times.
        var opened: (RawServerFixture, RawTunnelPeer)?
        for _ in 0..<3 where opened == nil {
            let fixture = try await RawServerFixture.start { $0.liveness = .init(idleTimeout: .seconds(5)) }
            let peer = try await fixture.peer()
            try await peer.send(.open(identifier: 5, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort))))
            if await peer.next() == .openResult(identifier: 5, result: .success) {
                opened = (fixture, peer)
            } else {
                await fixture.stop()
            }
        }
        let (fixture, peer) = try #require(opened, "the flow was never opened before the idle timeout, in three tries")
        // Silent for three idle timeouts, as an idle SSH session through Apple's client (which never probes) is.
        try await Task.sleep(for: .seconds(12))
        try await peer.send(.data(identifier: 5, payload: ByteBuffer(string: "still there?")), .close(identifier: 5, direction: .write))
        let (echoed, closedWith) = await peer.collectData(for: 5)
        #expect(echoed == ByteBuffer(string: "still there?"))
        #expect(closedWith == .write)
        // With the flow gone, silence ends the tunnel again.
        #expect(await peer.waitForClose(timeout: .seconds(20)))
        await fixture.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func theServersTunnelSocketFindsADeadPeerWithinTwoMinutes() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
        #expect(await peer.next() != nil)
        let accepted = try #require(fixture.server.tunnelChannels.first)
        func tcp(_ name: Int32) async throws -> Int {
            try await accepted.getOption(ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name))).get()
        }
        #expect(try await accepted.getOption(.socketOption(.so_keepalive)).get() == 1)
        let idle = try await tcp(TCP_KEEPIDLE), interval = try await tcp(TCP_KEEPINTVL), probes = try await tcp(TCP_KEEPCNT)
        let userTimeout = try await tcp(TCP_USER_TIMEOUT)
        #expect(idle + interval * probes <= 120, "keepalive gives up after \(idle + interval * probes) s")
        #expect(userTimeout > 0 && userTimeout <= 120_000, "TCP_USER_TIMEOUT is \(userTimeout) ms")
        await peer.close()
        await fixture.stop()
    }

    @Test func aClientNoticesAServerThatStoppedAnswering() async throws {
        // A "server" that completes the exchange a client starts with, then never answers again.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let listener = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addTunnelMessageCodec()
                    try channel.pipeline.syncOperations.addHandler(AnswersOnce())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        var settings = TunnelClientConnection.Settings(host: "127.0.0.1", port: listener.localAddress?.port ?? 0, tls: nil)
        settings.liveness = .init(probeInterval: .milliseconds(200), probeTimeout: .milliseconds(600))
        // Counted from before connecting: the probe's deadline cannot pass sooner, however slow the machine.
        let started = ContinuousClock.now
        let client = try await TunnelClientConnection.connect(settings: settings, group: group, logger: TunnelFixture.logger)
        // Closed by the unanswered probe: not before the probe is due and has had its time, and not long after.
        // The upper bound only says the probe, not some later timeout, ended it; a loaded machine gets room.
        #expect(await AdmissionPeers.eventually(timeout: .seconds(20)) { !client.channel.isActive })
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(700) && waited < .seconds(20), "closed after \(waited)")
        try? await listener.close()
        try? await group.shutdownGracefully()
    }

    @Test func aServerDropsASilentTunnel() async throws {
        let fixture = try await RawServerFixture.start { $0.liveness = .init(idleTimeout: .milliseconds(500)) }
        // Counted from before connecting: the server cannot have heard the peer any earlier.
        let connecting = ContinuousClock.now
        let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
        #expect(await peer.next() != nil)
        #expect(await peer.waitForClose(timeout: .seconds(5)))
        // Closed for its silence: not before the idle timeout has passed.
        #expect(ContinuousClock.now - connecting >= .milliseconds(500), "closed after \(ContinuousClock.now - connecting)")
        await fixture.stop()
    }
}

/// Answers the first fetchConfiguration, ignores everything after.
private final class AnswersOnce: ChannelInboundHandler {
    typealias InboundIn = TunnelInboundMessage
    typealias OutboundOut = TunnelMessage
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered, case .message(.fetchConfiguration) = unwrapInboundIn(data) else { return }
        answered = true
        context.writeAndFlush(wrapOutboundOut(.fetchConfiguration(identifier: 0, configuration: [:])), promise: nil)
    }
}
