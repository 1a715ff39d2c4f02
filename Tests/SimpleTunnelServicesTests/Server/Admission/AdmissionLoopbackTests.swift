import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOTLS
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("Admission on real sockets", .timeLimit(.minutes(4)))
struct AdmissionLoopbackTests {
    static func tlsServer(configure: (inout TunnelServer.Settings) -> Void = { _ in }) async throws -> (RawServerFixture, SelfSignedIdentity) {
        let identity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "admission-\(UUID().uuidString)")
        // Made first: a TLS set-up that fails must fail the test, not serve it in plaintext.
        let tls = try TLSContext(configuration: identity.serverConfiguration())
        let fixture = try await RawServerFixture.start { settings in
            settings.tls = tls
            configure(&settings)
        }
        return (fixture, identity)
    }

    static func metrics() -> (TunnelServerMetrics, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        return (TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)), registry)
    }

    static func refusals(_ reason: AdmissionRefusal, in registry: PrometheusCollectorRegistry) -> Double? {
        MetricsEndpointTests.value("simpletunnel_admission_refusals_total{reason=\"\(reason.rawValue)\"}", in: registry.emitToString())
    }

    @Test func twoThousandIdleSocketsFromOneAddressDoNotKeepAnotherOut() async throws {
        AdmissionPeers.allowOpenFiles(8192)
        let (fixture, identity) = try await Self.tlsServer()
        let flood = try await AdmissionPeers.idleSockets(2000, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        let perAddress = TunnelServer.Settings().startupsPerAddress
        // The server keeps that address's share and closes the rest.
        // Generous: beside a loaded parallel run, 2,000 closes take a while to be noticed.
        #expect(await AdmissionPeers.eventually(timeout: .seconds(150)) { flood.filter(\.isActive).count == perAddress })
        let tunnel = try await AuthenticationTests.connect(fixture, identity, login: nil, password: "")
        #expect(try await tunnel.fetchConfiguration() == [:])
        await tunnel.close()
        await AdmissionPeers.close(flood)
        await fixture.stop()
    }

    @Test func idleSocketsDoNotTakeTheTunnelsPlaces() async throws {
        let fixture = try await RawServerFixture.start { $0.maximumTunnels = 2 }
        let idle = try await AdmissionPeers.idleSockets(10, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.eventually { fixture.server.admission.current.unauthenticated == 10 })
        for _ in 0..<2 {
            let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
            #expect(await peer.next() != nil, "a tunnel was kept out by idle sockets")
        }
        let third = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group)
        #expect(await third.waitForClose(), "a third tunnel was admitted")
        await AdmissionPeers.close(idle)
        await fixture.stop()
    }

    @Test func startupsBeyondFullAreRefusedUntilOneBecomesATunnel() async throws {
        let (metrics, registry) = Self.metrics()
        let fixture = try await RawServerFixture.start { settings in
            settings.startups = StartupsPolicy(uncheckedStart: 2, rate: 100, full: 2)
            settings.metrics = metrics
        }
        let admission = fixture.server.admission
        let waiting = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group)
        let idle = try await AdmissionPeers.idleSockets(1, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.eventually { admission.current.unauthenticated == 2 })
        let refused = try await AdmissionPeers.idleSockets(1, from: "127.0.0.3", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.closedByServer(refused[0]))
        #expect(Self.refusals(.startupsFull, in: registry) == 1)
        // The waiting one sends its first message: it leaves the startups for the tunnels.
        try await waiting.send(.fetchConfiguration(identifier: 0))
        #expect(await waiting.next() != nil)
        #expect(admission.current.unauthenticated == 1 && admission.current.tunnels == 1)
        let admitted = try await AdmissionPeers.idleSockets(1, from: "127.0.0.3", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.eventually { admission.current.unauthenticated == 2 })
        #expect(admitted[0].isActive)
        await AdmissionPeers.close(idle + admitted)
        await waiting.close()
        await fixture.stop()
    }

    @Test func betweenStartAndFullTheDiceDecide() async throws {
        let fixture = try await RawServerFixture.start { settings in
            settings.startups = StartupsPolicy(uncheckedStart: 1, rate: 50, full: 10)
            // The first connection is below start (its roll, 30, is not looked at); the second, at start, drops 50%: 20 is dropped.
            let rolls = ScriptedRolls([30, 20])
            settings.startupsRoll = { rolls.next() }
        }
        let first = try await AdmissionPeers.idleSockets(1, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.eventually { fixture.server.admission.current.unauthenticated == 1 })
        let second = try await AdmissionPeers.idleSockets(1, from: "127.0.0.3", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.closedByServer(second[0]))
        #expect(first[0].isActive)
        await AdmissionPeers.close(first)
        await fixture.stop()
    }

    @Test func aTLSHandshakeThatDoesNotFinishIsCutOffAtItsOwnDeadline() async throws {
        let (metrics, registry) = Self.metrics()
        // The fixture's first-message timeout is 60 s: only the handshake's deadline can close the socket in time.
        let (fixture, _) = try await Self.tlsServer { settings in
            settings.tlsHandshakeTimeout = .milliseconds(500)
            settings.metrics = metrics
        }
        let idle = try await AdmissionPeers.idleSockets(1, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.closedByServer(idle[0], timeout: .seconds(20)))
        #expect(Self.refusals(.tlsHandshakeTimeout, in: registry) == 1)
        #expect(await AdmissionPeers.eventually { fixture.server.admission.current.unauthenticated == 0 })
        await fixture.stop()
    }

    @Test func messagesThatAreNotValidDoNotKeepAConnectionPastTheFirstMessageTimeout() async throws {
        let (metrics, registry) = Self.metrics()
        // 15 s: a loaded machine (the whole suite at once on two cores) can take seconds just to set the peer up.
        let fixture = try await RawServerFixture.start { settings in
            settings.firstMessageTimeout = .seconds(15)
            settings.metrics = metrics
        }
        let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group)
        // A known command with a mistyped key is dropped (B5), and is no first valid message.
        try await peer.send(propertyList: .dictionary(["identifier": 1, "command": 1, "data": .string("not data")]))
        #expect(await peer.waitForClose(timeout: .seconds(45)))
        // Counted as the server's side of the connection goes, which may be just after the peer saw it close.
        #expect(await AdmissionPeers.eventually { Self.refusals(.startupTimeout, in: registry) == 1 })
        #expect(await AdmissionPeers.eventually { fixture.server.admission.current.unauthenticated == 0 })
        await fixture.stop()
    }

    @Test func aFinishedHandshakeIsNotCutOffByItsDeadline() async throws {
        // A deadline a loaded machine can meet; the wait below is well past it.
        let (fixture, identity) = try await Self.tlsServer { $0.tlsHandshakeTimeout = .seconds(1) }
        let answers = TLSMessagePeer()
        let tls = try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint])))
        let channel = try await ClientBootstrap(group: fixture.group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(context: tls, serverName: "localhost", logger: TunnelFixture.logger))
                    try channel.pipeline.syncOperations.addTunnelMessageCodec()
                    try channel.pipeline.syncOperations.addHandler(answers)
                }
            }
            .connect(host: "127.0.0.1", port: fixture.port)
            .get()
        try await answers.handshake.futureResult.get()
        // Well past the handshake's deadline, still well within the first message's.
        try await Task.sleep(for: .seconds(3))
        try await channel.writeAndFlush(TunnelMessage.fetchConfiguration(identifier: 0))
        let answer = try await answers.firstMessage.futureResult.get()
        #expect(answer.command == .fetchConfiguration)
        try? await channel.close()
        await fixture.stop()
    }

    @Test func refusalsAreCountedByReason() async throws {
        let (metrics, registry) = Self.metrics()
        let fixture = try await RawServerFixture.start { settings in
            settings.startupsPerAddress = 2
            settings.metrics = metrics
        }
        let flood = try await AdmissionPeers.idleSockets(5, from: "127.0.0.2", to: fixture.port, group: fixture.group)
        #expect(await AdmissionPeers.eventually { flood.filter(\.isActive).count == 2 })
        #expect(Self.refusals(.perAddress, in: registry) == 3)
        let text = registry.emitToString()
        #expect(MetricsEndpointTests.value("simpletunnel_unauthenticated_connections", in: text) == 2, "\(text)")
        await AdmissionPeers.close(flood)
        await fixture.stop()
    }
}

/// A TLS client's end of a tunnel: says when TLS is up and what the first message was.
final class TLSMessagePeer: ChannelInboundHandler, Sendable {
    typealias InboundIn = TunnelInboundMessage
    let handshake = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
    let firstMessage = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: TunnelMessage.self)

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { handshake.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .message(let message) = unwrapInboundIn(data) { firstMessage.succeed(message) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(ChannelError.ioOnClosedChannel)
        firstMessage.fail(ChannelError.ioOnClosedChannel)
    }
}

/// Hands out fixed dice rolls in order, then 99 (admit).
final class ScriptedRolls: Sendable {
    private let rolls: NIOLockedValueBox<[Int]>

    init(_ rolls: [Int]) {
        self.rolls = NIOLockedValueBox(rolls)
    }

    func next() -> Int {
        rolls.withLockedValue { $0.isEmpty ? 99 : $0.removeFirst() }
    }
}
