import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Prometheus
import Testing
@testable import SimpleTunnelServices

/// Reads a host as the C library does (`getaddrinfo`, `inet_pton`): only up
/// to the first NUL. Names come from its table, never from the machine's resolver.
struct CStringNameResolver: NameResolver {
    var table: [String: String]

    func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
        let seen = String(decoding: host.utf8.prefix { $0 != 0 }, as: UTF8.self)
        if let literal = try? SocketAddress(ipAddress: seen, port: port) {
            return eventLoop.makeSucceededFuture([literal])
        }
        guard let address = table[seen.lowercased()], let resolved = try? SocketAddress(ipAddress: address, port: port) else {
            return eventLoop.makeFailedFuture(HostResolver.Failure.noSuchHost(host: seen, reason: "not in the test's table"))
        }
        return eventLoop.makeSucceededFuture([resolved])
    }
}

/// A TCP listener on loopback that counts the connections it accepts.
final class CountingListener: @unchecked Sendable {
    let channel: Channel
    private let count: NIOLockedValueBox<Int>

    var accepted: Int { count.withLockedValue { $0 } }
    var port: Int { channel.localAddress?.port ?? 0 }

    init(group: EventLoopGroup) async throws {
        let count = NIOLockedValueBox(0)
        self.count = count
        channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { child in
                count.withLockedValue { $0 += 1 }
                return child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }
}

/// What a peer spells as `host` is what the policy judges and what the
/// resolver looks up: a NUL, a space or a control character makes the
/// message malformed (PROTOCOL.md B5), so a name rule cannot be read one way
/// by the policy and another by the C library.
@Suite("Host spellings on real sockets", .timeLimit(.minutes(3)))
struct HostSpellingTests {
    static let smuggled = [
        "127.0.0.1\0.example.com", "localhost\0.example.com", "secret.internal\0.example.com",
        "127.0.0.1 .example.com", "127.0.0.1\t.example.com", "127.0.0.1\n.example.com", "secret.internal\u{7F}.example.com",
    ]
    static let resolver = CStringNameResolver(table: [
        "localhost": "127.0.0.1", "secret.internal": "127.0.0.1", "echo.example.com": "127.0.0.1",
    ])

    static func fixture(_ policy: DestinationPolicy, metrics: TunnelServerMetrics? = nil) async throws -> RawServerFixture {
        try await RawServerFixture.start { settings in
            settings.opener.resolver = Self.resolver
            settings.opener.authorizer = policy
            settings.metrics = metrics
        }
    }

    @Test func anAllowListByNameLetsNoSmuggledSpellingReachATCPDestination() async throws {
        let fixture = try await Self.fixture(try DestinationPolicy(allow: ["*.example.com"], deny: []))
        let destination = try await CountingListener(group: fixture.group)
        let peer = try await fixture.peer()
        for (index, host) in Self.smuggled.enumerated() {
            let result = try await ServerProtocolTests().open(peer, Int64(index + 1), host, destination.port)
            #expect(result == .invalidParameter, "\(host.debugDescription)")
        }
        #expect(destination.accepted == 0)
        // The list itself works: a name it names, resolving to the same place, connects.
        #expect(try await ServerProtocolTests().open(peer, 100, "echo.example.com", destination.port) == .success)
        #expect(await AdmissionPeers.eventually { destination.accepted == 1 })
        await peer.close()
        try? await destination.channel.close()
        await fixture.stop()
    }

    @Test func aDenyRuleByNameHoldsForEverySpellingOfTheName() async throws {
        let fixture = try await Self.fixture(try DestinationPolicy(allow: [], deny: ["secret.internal"]))
        let destination = try await CountingListener(group: fixture.group)
        let peer = try await fixture.peer()
        let results = [
            try await ServerProtocolTests().open(peer, 1, "secret.internal\0", destination.port),
            try await ServerProtocolTests().open(peer, 2, "secret.internal\0x", destination.port),
            try await ServerProtocolTests().open(peer, 3, "SECRET.Internal.", destination.port),
            try await ServerProtocolTests().open(peer, 4, "secret.internal", destination.port),
        ]
        #expect(results == [.invalidParameter, .invalidParameter, .refused, .refused])
        #expect(destination.accepted == 0)
        await peer.close()
        try? await destination.channel.close()
        await fixture.stop()
    }

    @Test func aSmuggledDatagramIsDroppedAndCountedWhileAGoodOneIsDelivered() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let fixture = try await Self.fixture(try DestinationPolicy(allow: ["*.example.com"], deny: []), metrics: metrics)
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let port = echo.localAddress?.port ?? 0
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 7, request: .udp))
        #expect(await peer.next() == .openResult(identifier: 7, result: .success))
        let bad = Self.smuggled.map { TunnelMessage.data(identifier: 7, payload: ByteBuffer(string: "smuggled"), endpoint: TunnelEndpoint(host: $0, port: port)) }
        try await peer.send(bad + [.data(identifier: 7, payload: ByteBuffer(string: "allowed"), endpoint: TunnelEndpoint(host: "echo.example.com", port: port))])
        // The echo of the good datagram comes back; none of the smuggled ones came before it.
        guard case .data(7, let payload, _) = await peer.next() else {
            Issue.record("no datagram came back")
            return
        }
        #expect(String(buffer: payload) == "allowed")
        #expect(MetricsEndpointTests.value("simpletunnel_malformed_messages_total", in: registry.emitToString()) == Double(Self.smuggled.count))
        // And none is on its way after it either.
        try await peer.send(.fetchConfiguration(identifier: 0))
        let next = await peer.next()
        guard case .fetchConfiguration = next else {
            Issue.record("expected only the configuration, got \(String(describing: next))")
            return
        }
        await peer.close()
        try? await echo.close()
        await fixture.stop()
    }
}
