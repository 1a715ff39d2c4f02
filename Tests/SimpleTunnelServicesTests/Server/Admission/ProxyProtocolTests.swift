import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// `--proxy-protocol-from` on real loopback sockets: behind a balancer at
/// 127.0.0.1, the client its PROXY v2 header names is who admission, the
/// login limits and `status` go by; a balancer connection without a valid
/// header, and a header from anyone else, are closed and counted.
@Suite("Admission: PROXY protocol from balancers", .timeLimit(.minutes(2)))
struct ProxyProtocolTests {
    static let balancer = try! IPNetworkList(parsing: "127.0.0.1/32")

    static func header(_ source: String, port: UInt16) -> ByteBuffer {
        let source = IPAddress(source)!
        let destination: IPAddress = if case .v4 = source { IPAddress("127.0.0.1")! } else { IPAddress("::1")! }
        return ByteBuffer(bytes: ProxyHeaderBytes.proxied(source: source, sourcePort: port, destination: destination, destinationPort: 4433))
    }

    @Test func loginFailuresLockOutOnlyTheClientTheHeaderNamesAndStatusShowsIt() async throws {
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "wonderland", iterations: AuthenticationTests.iterations))
        let identity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "proxy-\(UUID().uuidString)")
        let tls = try TLSContext(configuration: identity.serverConfiguration())
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: database, limiter: LoginRateLimiter(maximumFailures: 2))
            settings.tls = tls
            settings.proxyProtocolFrom = Self.balancer
        }
        let balancer = try await ProxyProtocolBalancer.start(backendPort: fixture.port, group: fixture.group)
        func connect(_ password: String) async throws -> TunnelClientConnection {
            var settings = TunnelClientConnection.Settings(
                host: "127.0.0.1", port: balancer.port, tls: try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint]))))
            settings.credentials = ("alice", password)
            return try await TunnelClientConnection.connect(settings: settings, group: fixture.group, logger: TunnelFixture.logger)
        }

        balancer.pretend("198.51.100.7", port: 40001)
        for _ in 0..<2 {
            await #expect(throws: TunnelLoginRefusedError.self) { _ = try await connect("guess") }
        }
        await #expect(throws: TunnelLoginRefusedError.self, "the guessing client was not locked out") { _ = try await connect("wonderland") }

        balancer.pretend("203.0.113.9", port: 40002)
        let tunnel = try await connect("wonderland")
        #expect(try await tunnel.fetchConfiguration() == [:])
        let status = await fixture.server.status()
        #expect(status.tunnels.map(\.peer) == ["203.0.113.9:40002"])

        // A health check (LOCAL) is the balancer's own connection.
        balancer.pretend(nil)
        let local = try await connect("wonderland")
        let peers = await fixture.server.status().tunnels.map(\.peer)
        #expect(peers.count == 2 && peers.contains { $0.hasPrefix("127.0.0.1:") }, "\(peers)")
        await local.close()
        await tunnel.close()
        await balancer.stop()
        await fixture.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func theStartupsOfOneAddressAreCountedForTheClientNotTheBalancer() async throws {
        let fixture = try await RawServerFixture.start { settings in
            settings.proxyProtocolFrom = Self.balancer
            settings.startupsPerAddress = 1
        }
        // Silent after their headers: each holds a startup of the client its header names.
        let first = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, from: "127.0.0.1")
        try await first.sendRaw(Self.header("198.51.100.7", port: 1))
        let sameClient = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, from: "127.0.0.1")
        try await sameClient.sendRaw(Self.header("198.51.100.7", port: 2))
        #expect(await sameClient.waitForClose(), "a second startup of one client was kept")

        let other = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, from: "127.0.0.1")
        try await other.sendRaw(Self.header("2001:db8::9", port: 3))
        try await other.send(.fetchConfiguration(identifier: 0))
        #expect(await other.next() != nil, "another client behind the same balancer was refused")
        #expect(fixture.server.admission.current.unauthenticated(from: ClientAddressGroup(IPAddress("198.51.100.7")!)) == 1)
        await first.close()
        await other.close()
        await fixture.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aBalancerWithoutAHeaderAndAHeaderFromAStrangerAreClosedAndCounted() async throws {
        let (metrics, registry) = AdmissionLoopbackTests.metrics()
        let fixture = try await RawServerFixture.start { settings in
            settings.proxyProtocolFrom = Self.balancer
            settings.metrics = metrics
            // Short, for the silent balancer; long enough that a busy test machine sends the stranger's header before it.
            // (2 s was too short: under a full parallel run the stranger's connection sometimes timed out first.)
            settings.firstMessageTimeout = .seconds(6)
        }
        // The listed balancer sends a frame, not a header.
        let bare = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0), from: "127.0.0.1")
        #expect(await bare.waitForClose())
        // Silent: closed at the deadline.
        let silent = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, from: "127.0.0.1")
        #expect(await silent.waitForClose())
        #expect(await AdmissionPeers.eventually { AdmissionLoopbackTests.refusals(.proxyHeader, in: registry) == 2 })

        // Another address: no header expected, and one that comes is refused before anything else.
        let stranger = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, from: "127.0.0.2")
        // Known to miss in a full parallel run on two cores (the count stays 0 or the send finds the channel
        // closed), never alone; the stranger is closed either way. Its cause is not found yet.
        await withKnownIssue("an untrusted header is sometimes not counted in a full parallel run", isIntermittent: true) {
            try await stranger.sendRaw(Self.header("198.51.100.7", port: 1))
            #expect(await stranger.waitForClose())
            #expect(await AdmissionPeers.eventually { AdmissionLoopbackTests.refusals(.untrustedProxyHeader, in: registry) == 1 })
        }
        let direct = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0), from: "127.0.0.2")
        #expect(await direct.next() != nil, "a direct client from an unlisted address was not served")
        #expect(fixture.server.admission.current.unauthenticated == 0)
        await direct.close()
        await fixture.stop()
    }
}
