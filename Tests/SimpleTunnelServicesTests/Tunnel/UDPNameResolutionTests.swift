import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Holds every lookup until the test answers it, as a slow resolver would;
/// answers `echo.test` with loopback, anything else with no such host.
final class GatedNameResolver: NameResolver {
    private let pending = NIOLockedValueBox<[(host: String, port: Int, promise: EventLoopPromise<[SocketAddress]>)]>([])
    private let calls = NIOLockedValueBox(0)

    var lookups: Int { calls.withLockedValue { $0 } }

    func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
        let promise = eventLoop.makePromise(of: [SocketAddress].self)
        calls.withLockedValue { $0 += 1 }
        pending.withLockedValue { $0.append((host, port, promise)) }
        return promise.futureResult
    }

    /// Answers every lookup made so far, from the test's thread.
    func answerAll() {
        for lookup in pending.withLockedValue({ list in defer { list.removeAll() }; return list }) {
            if lookup.host == "echo.test", let address = try? SocketAddress(ipAddress: "127.0.0.1", port: lookup.port) {
                lookup.promise.succeed([address])
            } else {
                lookup.promise.fail(HostResolver.Failure.noSuchHost(host: lookup.host, reason: "not in the test's table"))
            }
        }
    }
}

@Suite("UDP flows and name resolution")
struct UDPNameResolutionTests {
    @Test func datagramsToANameBeingResolvedShareOneLookupAndAllArrive() async throws {
        let resolver = GatedNameResolver()
        let fixture = try await RawServerFixture.start { $0.opener.resolver = resolver }
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let port = try #require(echo.localAddress?.port)
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 4, request: .udp))
        #expect(await peer.next() == .openResult(identifier: 4, result: .success))
        let destination = TunnelEndpoint(host: "echo.test", port: port)
        try await peer.send((1...5).map { .data(identifier: 4, payload: ByteBuffer(string: "datagram \($0)"), endpoint: destination) })
        // The server has taken all five once the flow answers a later message.
        try await peer.send(.fetchConfiguration(identifier: 0))
        _ = await peer.next { if case .fetchConfiguration = $0 { false } else { true } }
        #expect(resolver.lookups == 1)

        // Answered later, on another thread: all five go out without another datagram to push them.
        resolver.answerAll()
        var echoed: Set<String> = []
        while echoed.count < 5, let message = await peer.next(timeout: .seconds(5)) {
            if case .data(4, let payload, _) = message {
                echoed.insert(String(buffer: payload))
            }
        }
        #expect(echoed == Set((1...5).map { "datagram \($0)" }))

        // The answer is remembered: no new lookup for the next datagram.
        try await peer.send(.data(identifier: 4, payload: ByteBuffer(string: "again"), endpoint: destination))
        if case .data(4, let payload, _)? = await peer.next(timeout: .seconds(5)) {
            #expect(String(buffer: payload) == "again")
        } else {
            Issue.record("the datagram sent after the answer did not come back")
        }
        #expect(resolver.lookups == 1)
        await peer.close()
        try? await echo.close()
        await fixture.stop()
    }

    @Test func aFloodToAnUnresolvedNameStartsOneLookupAndTheFlowCarriesOn() async throws {
        let resolver = GatedNameResolver()
        let fixture = try await RawServerFixture.start { $0.opener.resolver = resolver }
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let port = try #require(echo.localAddress?.port)
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 6, request: .udp))
        #expect(await peer.next() == .openResult(identifier: 6, result: .success))
        let nowhere = TunnelEndpoint(host: "nowhere.test", port: port)
        try await peer.send((1...500).map { .data(identifier: 6, payload: ByteBuffer(string: "lost \($0)"), endpoint: nowhere) })
        try await peer.send(.fetchConfiguration(identifier: 0))
        _ = await peer.next { if case .fetchConfiguration = $0 { false } else { true } }
        #expect(resolver.lookups == 1)
        resolver.answerAll()

        // The failed name costs nothing further; a literal destination still works.
        try await peer.send(.data(identifier: 6, payload: ByteBuffer(string: "direct"), endpoint: TunnelEndpoint(host: "127.0.0.1", port: port)))
        let message = await peer.next(timeout: .seconds(5))
        guard case .data(6, let payload, _)? = message else {
            Issue.record("expected the echo of the literal destination, got \(String(describing: message))")
            return
        }
        #expect(String(buffer: payload) == "direct")
        await peer.close()
        try? await echo.close()
        await fixture.stop()
    }
}
