import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Client reconnection: reasserting keeps the listeners, backoff, --once, permanent failures", .serialized, .timeLimit(.minutes(3)))
struct ReconnectionTests {
    /// A TLS server (self-signed, pinned by the client) that can be stopped and started again on the same port.
    final class RestartableServer: Sendable {
        let group: EventLoopGroup
        let identity: SelfSignedIdentity
        let users: UserDatabase?
        let port: Int
        private let running = NIOLockedValueBox<TunnelServer?>(nil)

        init(group: EventLoopGroup, users: UserDatabase? = nil) async throws {
            self.group = group
            self.users = users
            identity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "reconnect-\(UUID().uuidString)")
            // A port that was free a moment ago: the server's own, stopped at once.
            let identity = self.identity
            let probe = try await RestartablePort.bind { port in
                try await Self.startServer(port: port, group: group, identity: identity, users: users)
            }
            port = probe.localAddress.port ?? 0
            await probe.shutdown()
        }

        static func startServer(port: Int, group: EventLoopGroup, identity: SelfSignedIdentity, users: UserDatabase?) async throws -> TunnelServer {
            var settings = TunnelServer.Settings()
            settings.port = port
            settings.tls = try TLSContext(configuration: identity.serverConfiguration())
            settings.opener.resolver = StaticNameResolver()
            settings.authentication = users.map { .init(users: $0) }
            return try await TunnelServer.start(settings: settings, group: group, logger: TunnelFixture.logger)
        }

        func start() async throws {
            let server = try await Self.startServer(port: port, group: group, identity: identity, users: users)
            running.withLockedValue { $0 = server }
        }

        func stop() async {
            await running.withLockedValue { $0 }?.shutdown()
            running.withLockedValue { $0 = nil }
        }

        func clientSettings(host: String = "127.0.0.1", pin: [UInt8]? = nil) throws -> TunnelClientConnection.Settings {
            let trust = TLSConfiguration.Trust.pinnedSHA256([pin ?? identity.sha256Fingerprint])
            return TunnelClientConnection.Settings(host: host, port: port, tls: try TLSContext(configuration: .client(trust: trust)))
        }

        func remove() {
            try? FileManager.default.removeItem(atPath: identity.directory)
        }
    }

    static var quickBackoff: ReconnectBackoff {
        var backoff = ReconnectBackoff()
        backoff.initial = .milliseconds(50)
        backoff.maximum = .milliseconds(200)
        return backoff
    }

    /// Slow enough that a poll of the control socket sees why the tunnel went
    /// down before the first retry replaces the last error with its own.
    static var observableBackoff: ReconnectBackoff {
        var backoff = ReconnectBackoff()
        backoff.initial = .milliseconds(800)
        backoff.maximum = .milliseconds(800)
        return backoff
    }

    /// Asks the control socket until the state is `state`; returns the states seen on the way.
    static func waitForState(_ state: TunnelClientState, path: String, group: EventLoopGroup, seen: inout [TunnelClientState]) async throws -> TunnelClientStatus? {
        for _ in 0..<500 {
            if let status = try? await ControlClient.request("status", path: path, group: group).status {
                if seen.last != status.state { seen.append(status.state) }
                if status.state == state { return status }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    @Test func statusGoesConnectingConnectedReassertingConnectedAndTheListenersKeepServing() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await RestartableServer(group: group)
        let echo = try await LoopbackPeers.echoServer(group: group)
        let echoPort = try #require(echo.localAddress?.port)
        let path = NSTemporaryDirectory() + "reconnect-\(UUID().uuidString.prefix(8))/client.sock"
        let forwardPort = NIOLockedValueBox<Int?>(nil)
        let socksPort = NIOLockedValueBox<Int?>(nil)
        // By name: the first connection resolves it, reconnections go to the address it had.
        let service = TunnelClientService(
            settings: try server.clientSettings(host: "localhost"), group: group, logger: TunnelFixture.logger, controlPath: path,
            reconnect: Self.observableBackoff
        ) { tunnel, _ in
            let forwarder = try await TCPPortForwarder.start(
                bindHost: "127.0.0.1", bindPort: 0, destination: TunnelEndpoint(host: "127.0.0.1", port: echoPort), tunnel: tunnel,
                logger: TunnelFixture.logger)
            forwardPort.withLockedValue { $0 = forwarder.localAddress.port }
            let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: tunnel, logger: TunnelFixture.logger)
            socksPort.withLockedValue { $0 = proxy.localAddress.port }
            return [.init(close: { await forwarder.close() }), .init(close: { await proxy.close() })]
        }
        // The client starts before its server: it keeps trying.
        let run = Task { try await service.run() }
        var seen: [TunnelClientState] = []
        #expect(try await Self.waitForState(.connecting, path: path, group: group, seen: &seen) != nil)
        try await Task.sleep(for: .milliseconds(300))
        #expect(service.status.state == .connecting)

        try await server.start()
        let up = try await Self.waitForState(.connected, path: path, group: group, seen: &seen)
        #expect(up?.tlsVersion == "TLSv1.3")
        #expect(up?.server == "localhost:\(server.port)")
        let port = try #require(forwardPort.withLockedValue { $0 })
        let payload = ByteBuffer(string: "before the restart")
        #expect(try await LoopbackPeers.exchange(payload, port: port, group: group) == payload)

        // A connection open through the forward when the tunnel drops is closed, not left hanging.
        let openAtTheDrop = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
        try await openAtTheDrop.writeAndFlush(ByteBuffer(string: "in flight"))
        try await Task.sleep(for: .milliseconds(100))

        // The server goes away: the client reasserts, and its forward still accepts (and closes at once).
        await server.stop()
        try await openAtTheDrop.closeFuture.get()
        let reasserting = try await Self.waitForState(.reasserting, path: path, group: group, seen: &seen)
        // Why: the loss, or (on a loaded machine, when the first attempt came first) the failed reconnection.
        let why = reasserting?.lastError ?? ""
        #expect(why.contains("was lost") || why.contains("cannot connect"), "\(String(describing: reasserting))")
        let duringOutage = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
        try await duringOutage.closeFuture.get()
        // The SOCKS proxy answers CONNECT with "network unreachable" (3) meanwhile.
        let socks = try #require(socksPort.withLockedValue { $0 })
        let reply = try await Self.socksConnect(to: echoPort, proxyPort: socks, group: group)
        #expect(Array(reply.readableBytesView.prefix(4)) == [5, 0, 5, 3], "\(reply.readableBytesView.map { $0 })")

        // Back again on the same port: the same forward carries flows through the new tunnel.
        try await server.start()
        let again = try await Self.waitForState(.connected, path: path, group: group, seen: &seen)
        #expect(again?.reconnections == 1)
        let after = ByteBuffer(string: "after the restart")
        #expect(try await LoopbackPeers.exchange(after, port: port, group: group) == after)
        #expect(seen == [.connecting, .connected, .reasserting, .connected])

        _ = try await ControlClient.request("stop", path: path, group: group)
        try await run.value
        #expect(service.status.state == .disconnected)
        await server.stop()
        server.remove()
        try await echo.close()
        try await group.shutdownGracefully()
    }

    /// A SOCKS5 greeting and CONNECT to 127.0.0.1:`port`, sent at once; what the proxy answers until it closes.
    static func socksConnect(to port: Int, proxyPort: Int, group: EventLoopGroup) async throws -> ByteBuffer {
        let collector = CollectingHandler()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: proxyPort)
            .get()
        let received = collector.promise(on: channel.eventLoop)
        try await channel.writeAndFlush(ByteBuffer(bytes: [5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF)]))
        return try await received.get()
    }

    @Test func withoutReconnectionALostTunnelEndsTheRunWithAnError() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await RestartableServer(group: group)
        try await server.start()
        let service = TunnelClientService(settings: try server.clientSettings(), group: group, logger: TunnelFixture.logger, reconnect: nil) { _, _ in [] }
        let run = Task { try await service.run() }
        for _ in 0..<250 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        // The error below must come from losing a tunnel that was up, not from never connecting.
        #expect(service.status.state == .connected)
        await server.stop()
        await #expect(throws: TunnelClientLaunchError.self) { try await run.value }
        #expect(service.status.state == .disconnected)
        server.remove()
        try await group.shutdownGracefully()
    }

    @Test func aRefusedLoginOrAnUntrustedCertificateIsNotRetried() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var users = UserDatabase()
        users.set("alice", hash: try PasswordHash(password: "right", iterations: PasswordHash.minimumIterations))
        let server = try await RestartableServer(group: group, users: users)
        try await server.start()

        var wrongPassword = try server.clientSettings()
        wrongPassword.credentials = ("alice", "wrong")
        let refused = TunnelClientService(settings: wrongPassword, group: group, logger: TunnelFixture.logger, reconnect: Self.quickBackoff) { _, _ in [] }
        await #expect(throws: TunnelLoginRefusedError.self) { try await refused.run() }

        var wrongPin = try server.clientSettings(pin: [UInt8](repeating: 7, count: 32))
        wrongPin.credentials = ("alice", "right")
        let untrusted = TunnelClientService(settings: wrongPin, group: group, logger: TunnelFixture.logger, reconnect: Self.quickBackoff) { _, _ in [] }
        await #expect(throws: TLSError.pinnedCertificateMismatch(presented: server.identity.sha256FingerprintHex)) { try await untrusted.run() }

        await server.stop()
        server.remove()
        try await group.shutdownGracefully()
    }

    @Test func anUntrustedCertificateAfterTheTunnelWasUpIsRetriedUntilTheRealServerIsBack() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await RestartableServer(group: group)
        try await server.start()
        let service = TunnelClientService(settings: try server.clientSettings(), group: group, logger: TunnelFixture.logger, reconnect: Self.quickBackoff) { _, _ in [] }
        let run = Task { try await service.run() }
        for _ in 0..<250 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(service.status.state == .connected)

        // Someone else answers on the server's port, with a certificate the client does not trust.
        await server.stop()
        let impostorIdentity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "impostor-\(UUID().uuidString)")
        let impostor = try await RestartableServer.startServer(port: server.port, group: group, identity: impostorIdentity, users: nil)
        var refusedImpostor = false
        for _ in 0..<250 where !refusedImpostor {
            refusedImpostor = await service.status.snapshot().lastError?.contains(impostorIdentity.sha256FingerprintHex) == true
            try await Task.sleep(for: .milliseconds(20))
        }
        let impostorError = await service.status.snapshot().lastError
        #expect(refusedImpostor, "the client never met the impostor: \(String(describing: impostorError))")
        // It keeps trying (several backoff rounds later it still runs, reasserting) instead of giving up and exiting.
        try await Task.sleep(for: .seconds(1))
        #expect(service.status.state == .reasserting)

        // The real server returns: the client is back on it.
        await impostor.shutdown()
        try await server.start()
        for _ in 0..<250 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(service.status.state == .connected)
        service.status.requestStop()
        try await run.value
        await server.stop()
        server.remove()
        try? FileManager.default.removeItem(atPath: impostorIdentity.directory)
        try await group.shutdownGracefully()
    }

    /// Answers a name with the loopback address the first time only, as a full
    /// tunnel's DNS does once the tunnel is down: out of reach.
    final class AnswersOnce: Resolver, Sendable {
        let eventLoop: EventLoop
        let lookups: NIOLockedValueBox<Int>

        init(eventLoop: EventLoop, lookups: NIOLockedValueBox<Int>) {
            self.eventLoop = eventLoop
            self.lookups = lookups
        }

        func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
            let first = lookups.withLockedValue { count in
                count += 1
                return count == 1
            }
            guard first else { return eventLoop.makeFailedFuture(ChannelError.connectTimeout(.seconds(5))) }
            return eventLoop.makeCompletedFuture { [try SocketAddress(ipAddress: "127.0.0.1", port: port)] }
        }

        func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
            eventLoop.makeSucceededFuture([])
        }

        func cancelQueries() {}
    }

    @Test func aClientStartedByNameReconnectsToTheAddressItHadWhenTheNameNoLongerResolves() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await RestartableServer(group: group)
        try await server.start()
        var settings = try server.clientSettings(host: "vpn.test")
        let lookups = NIOLockedValueBox(0)
        settings.resolver = { AnswersOnce(eventLoop: $0, lookups: lookups) }
        let service = TunnelClientService(settings: settings, group: group, logger: TunnelFixture.logger, reconnect: Self.quickBackoff) { _, _ in [] }
        let run = Task { try await service.run() }
        for _ in 0..<250 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(service.status.state == .connected)

        await server.stop()
        for _ in 0..<250 where service.status.state != .reasserting {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(300))
        try await server.start()
        for _ in 0..<250 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        let lastError = await service.status.snapshot().lastError
        #expect(service.status.state == .connected, "\(String(describing: lastError))")
        #expect(lookups.withLockedValue { $0 } == 1, "the name was looked up again")
        service.status.requestStop()
        try await run.value
        await server.stop()
        server.remove()
        try await group.shutdownGracefully()
    }

    @Test func aReconnectionGoesToTheAddressAndStillVerifiesTheName() {
        let settings = TunnelClientConnection.Settings(host: "vpn.example", port: 4433, tls: nil)
        let again = settings.reconnecting(to: "192.0.2.7")
        #expect(again.host == "192.0.2.7" && again.serverName == "vpn.example" && again.port == 4433)
        var named = settings
        named.serverName = "other.example"
        #expect(named.reconnecting(to: "192.0.2.7").serverName == "other.example")
        #expect(settings.reconnecting(to: nil).host == "vpn.example")
    }

    /// The same numbers every time, for checking the backoff's bounds.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state
        }
    }

    @Test func theBackoffDoublesUpToItsMaximumWithJitterInTheUpperHalf() {
        let backoff = ReconnectBackoff()
        var generator = SeededGenerator(state: 42)
        for attempt in 1...40 {
            let ceiling = min(Int64(500_000_000) << min(attempt - 1, 20), 30_000_000_000)
            let samples = (0..<50).map { _ in backoff.delay(beforeAttempt: attempt, using: &generator).nanoseconds }
            #expect(samples.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling }, "attempt \(attempt)")
            #expect(Set(samples).count > 1, "attempt \(attempt) has no jitter")
        }
    }
}

@Suite("Client reconnection: tunnels that die young", .timeLimit(.minutes(2)))
struct ShortLivedTunnelTests {
    @Test func lossesSoonAfterComingUpAddUpAndALongLifeResetsThem() {
        var losses = ShortLivedTunnels()
        #expect(losses.tunnelLost(after: .seconds(1)) == 1)
        #expect(losses.tunnelLost(after: .seconds(2)) == 2)
        #expect(losses.warning == nil)
        #expect(losses.tunnelLost(after: .milliseconds(900)) == 3)
        let warning = try? #require(losses.warning)
        #expect(warning?.contains("another client with the same certificate or login") == true)
        #expect(losses.tunnelLost(after: .seconds(600)) == 0)
        #expect(losses.warning == nil)
    }

    @Test func aServerThatWasAwayIsNamedInsteadOfAnotherClient() {
        // A failover: the first attempt after a loss met the dead server.
        var losses = ShortLivedTunnels()
        losses.tunnelLost(after: .seconds(1))
        losses.reconnected(attempts: 1)
        losses.tunnelLost(after: .seconds(1))
        losses.reconnected(attempts: 2)
        losses.tunnelLost(after: .seconds(1))
        let warning = losses.warning ?? ""
        #expect(warning.contains("restarting or failing over"), "\(warning)")
        #expect(!warning.contains("another client"), "\(warning)")
        // A long-lived tunnel starts a new streak, where only quick returns point at another client.
        losses.tunnelLost(after: .seconds(600))
        for _ in 0..<3 {
            losses.reconnected(attempts: 1)
            losses.tunnelLost(after: .seconds(1))
        }
        #expect(losses.warning?.contains("another client with the same certificate or login") == true)
    }

    @Test func eachShortLivedTunnelDoublesTheFirstWaitUpToTheMaximum() {
        // The wait before the first attempt after the n-th short-lived loss in a row is
        // `delay(beforeAttempt: n)`: at least half of initial × 2^(n-1), capped at the maximum.
        let backoff = ReconnectBackoff()
        var generator = SystemRandomNumberGenerator()
        let afterOne = backoff.delay(beforeAttempt: 1, using: &generator)
        let afterFive = backoff.delay(beforeAttempt: 5, using: &generator)
        let afterTen = backoff.delay(beforeAttempt: 10, using: &generator)
        #expect(afterOne <= .milliseconds(500))
        #expect(afterFive >= .seconds(4))
        #expect(afterTen >= .seconds(15) && afterTen <= .seconds(30))
    }
}

@Suite("Client reconnection: what a failed attempt is said to mean", .timeLimit(.minutes(2)))
struct ReconnectFailureTests {
    @Test func aServerThatSpokeTLSBeforeAndClosesNowIsGoingAwayNotPlaintext() {
        let reason = ReconnectFailure.reason(TLSHandshakeFailureRecorder.closedHint)
        #expect(reason.contains("restarting or failing over"), "\(reason)")
        #expect(!reason.contains("--plaintext"), "\(reason)")
        let other = TLSError.pinnedCertificateMismatch(presented: "ab12")
        #expect(ReconnectFailure.reason(other) == "\(other)")
    }

    @Test func beforeTheFirstTunnelAnUntrustedServerOrARefusedLoginEndsTheClient() {
        #expect(ReconnectFailure.decide(TLSError.pinnedCertificateMismatch(presented: "ab12"), afterLoss: false) == .giveUp)
        #expect(ReconnectFailure.decide(TunnelLoginRefusedError(login: "alice"), afterLoss: false) == .giveUp)
        #expect(ReconnectFailure.decide(TunnelClosedError(), afterLoss: false) != .giveUp)
    }

    @Test func afterATunnelWasUpEveryFailureIsRetriedSoNothingFailsOpen() {
        let failures: [any Error] = [
            TLSError.pinnedCertificateMismatch(presented: "ab12"), TLSError.serverNameMismatch(expected: "vpn.example", certificateNames: ["evil.example"]),
            TunnelLoginRefusedError(login: "alice"), TLSHandshakeFailureRecorder.closedHint, TunnelClosedError(),
        ]
        for failure in failures {
            guard case .retry(let reason) = ReconnectFailure.decide(failure, afterLoss: true) else {
                Issue.record("\(failure) ends the client after a loss")
                continue
            }
            #expect(!reason.isEmpty)
        }
        guard case .retry(let reason) = ReconnectFailure.decide(TLSError.pinnedCertificateMismatch(presented: "ab12"), afterLoss: true) else { return }
        #expect(reason.contains("posing as it"), "\(reason)")
    }
}
