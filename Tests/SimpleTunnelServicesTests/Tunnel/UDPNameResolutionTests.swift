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

/// A UDP flow opened by a raw peer on a server whose names wait for the test,
/// and a UDP echo server on loopback to send to.
struct GatedUDPFlow {
    let resolver = GatedNameResolver()
    let identifier: TunnelConnectionIdentifier
    let fixture: RawServerFixture
    let echo: Channel
    let peer: RawTunnelPeer

    var echoPort: Int { echo.localAddress?.port ?? 0 }

    init(identifier: TunnelConnectionIdentifier) async throws {
        self.identifier = identifier
        let resolver = self.resolver
        fixture = try await RawServerFixture.start { $0.opener.resolver = resolver }
        echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        peer = try await fixture.peer()
        try await peer.send(.open(identifier: identifier, request: .udp))
        #expect(await peer.next() == .openResult(identifier: identifier, result: .success))
    }

    /// Sends each text as a datagram to `host` at the echo server's port; with
    /// `untilTaken`, returns once the server has taken them all (it answered a
    /// later message), skipping whatever came before that answer.
    func send(_ texts: [String], to host: String, untilTaken: Bool = true) async throws {
        let destination = TunnelEndpoint(host: host, port: echoPort)
        try await peer.send(texts.map { .data(identifier: identifier, payload: ByteBuffer(string: $0), endpoint: destination) })
        guard untilTaken else { return }
        try await peer.send(.fetchConfiguration(identifier: 0))
        _ = await peer.next { if case .fetchConfiguration = $0 { false } else { true } }
    }

    func stop() async {
        await peer.close()
        try? await echo.close()
        await fixture.stop()
    }
}

@Suite("UDP flows and name resolution", .timeLimit(.minutes(2)))
struct UDPNameResolutionTests {
    @Test func datagramsToANameBeingResolvedShareOneLookupAndAllArrive() async throws {
        let flow = try await GatedUDPFlow(identifier: 4)
        let texts = (1...5).map { "datagram \($0)" }
        try await flow.send(texts, to: "echo.test")
        #expect(flow.resolver.lookups == 1)

        // Answered later, on another thread: all five go out without another datagram to push them.
        flow.resolver.answerAll()
        var echoed: Set<String> = []
        while echoed.count < 5, let message = await flow.peer.next(timeout: .seconds(5)) {
            if case .data(4, let payload, _) = message {
                echoed.insert(String(buffer: payload))
            }
        }
        #expect(echoed == Set(texts))

        // The answer is remembered: no new lookup for the next datagram.
        try await flow.send(["again"], to: "echo.test", untilTaken: false)
        if case .data(4, let payload, _)? = await flow.peer.next(timeout: .seconds(5)) {
            #expect(String(buffer: payload) == "again")
        } else {
            Issue.record("the datagram sent after the answer did not come back")
        }
        #expect(flow.resolver.lookups == 1)
        await flow.stop()
    }

    @Test func aFloodToAnUnresolvedNameStartsOneLookupAndTheFlowCarriesOn() async throws {
        let flow = try await GatedUDPFlow(identifier: 6)
        try await flow.send((1...500).map { "lost \($0)" }, to: "nowhere.test")
        #expect(flow.resolver.lookups == 1)
        flow.resolver.answerAll()

        // The failed name costs nothing further; a literal destination still works.
        try await flow.send(["direct"], to: "127.0.0.1", untilTaken: false)
        let message = await flow.peer.next(timeout: .seconds(5))
        guard case .data(6, let payload, _)? = message else {
            Issue.record("expected the echo of the literal destination, got \(String(describing: message))")
            return
        }
        #expect(String(buffer: payload) == "direct")
        #expect(flow.resolver.lookups == 1)
        await flow.stop()
    }
}
