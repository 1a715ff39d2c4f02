import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A plaintext server on loopback and a hand-driven peer: what the server
/// answers to each message a client can send (PROTOCOL.md A4, A6, B5).
struct RawServerFixture {
    let group: MultiThreadedEventLoopGroup
    let server: TunnelServer
    let echo: Channel

    var port: Int { server.localAddress.port ?? 0 }
    var echoPort: Int { echo.localAddress?.port ?? 0 }

    static func start(configure: (inout TunnelServer.Settings) -> Void = { _ in }) async throws -> RawServerFixture {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var settings = TunnelServer.Settings()
        settings.port = 0
        settings.opener.resolver = StaticNameResolver()
        // Peers here send their first message from the test's task, which a loaded
        // machine can hold back past the default 10 s; the timeout's own test sets it.
        settings.firstMessageTimeout = .seconds(60)
        configure(&settings)
        let server = try await TunnelServer.start(settings: settings, group: group, logger: TunnelFixture.logger)
        let echo = try await LoopbackPeers.echoServer(group: group)
        return RawServerFixture(group: group, server: server, echo: echo)
    }

    func peer() async throws -> RawTunnelPeer {
        try await RawTunnelPeer.connect(port: port, group: group)
    }

    func stop() async {
        await server.shutdown()
        try? await echo.close()
        try? await group.shutdownGracefully()
    }
}

/// Denies one port; allows everything else.
struct DenyPort: DestinationAuthorizer {
    let port: Int
    func refusal(forHost host: String, port: Int) -> String? { port == self.port ? "port \(port) is denied" : nil }
    func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? { nil }
}

@Suite("Server protocol behaviour", .timeLimit(.minutes(2)))
struct ServerProtocolTests {
    func open(_ peer: RawTunnelPeer, _ identifier: Int64, _ host: String, _ port: Int) async throws -> TunnelConnectionOpenResult? {
        try await peer.send(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: host, port: port))))
        guard case .openResult(identifier, let result, _, _) = await peer.next() else { return nil }
        return result
    }

    @Test func everyOpenResultCode() async throws {
        let saturated = try SaturatedListener()
        let fixture = try await RawServerFixture.start { settings in
            settings.opener.connectTimeout = .seconds(1)
            settings.opener.authorizer = DenyPort(port: 9)
        }
        let closed = try await DestinationServers.closedPort(group: fixture.group)
        let peer = try await fixture.peer()

        #expect(try await open(peer, 1, "127.0.0.1", fixture.echoPort) == .success)
        #expect(try await open(peer, 2, "localhost", fixture.echoPort) == .success)
        #expect(try await open(peer, 3, "nosuch.test", fixture.echoPort) == .noSuchHost)
        #expect(try await open(peer, 4, "127.0.0.1", closed) == .refused)
        #expect(try await open(peer, 5, "127.0.0.1", 9) == .refused)
        #expect(try await open(peer, 6, "127.0.0.1", saturated.port) == .timeout)
        try await peer.send(.open(identifier: 7, request: .plainIP))
        #expect(await peer.next() == .openResult(identifier: 7, result: .internalError))

        // Malformed opens get 1.
        try await peer.send(propertyList: .dictionary([
            "identifier": 8, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": .string("127.0.0.1"), "port": .string("+80"),
        ]))
        #expect(await peer.next() == .openResult(identifier: 8, result: .invalidParameter))
        try await peer.send(propertyList: .dictionary(["identifier": 0, "command": 6, "tunnel-type": 1]))
        #expect(await peer.next() == .openResult(identifier: 0, result: .invalidParameter))

        // After a failure the identifier is free again.
        #expect(try await open(peer, 4, "127.0.0.1", fixture.echoPort) == .success)
        await peer.close()
        await fixture.stop()
    }

    @Test func secondOpenOfALiveIdentifierGetsOneAndLeavesTheFirstAlone() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await fixture.peer()
        #expect(try await open(peer, 42, "127.0.0.1", fixture.echoPort) == .success)
        #expect(try await open(peer, 42, "127.0.0.1", fixture.echoPort) == .invalidParameter)
        try await peer.send(.data(identifier: 42, payload: ByteBuffer(string: "still here")), .close(identifier: 42, direction: .write))
        let (data, closedWith) = await peer.collectData(for: 42)
        #expect(data == ByteBuffer(string: "still here"))
        #expect(closedWith == .write)
        await peer.close()
        await fixture.stop()
    }

    @Test func dataSentBeforeTheOpenResultIsKept() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await fixture.peer()
        try await peer.send(
            .open(identifier: 5, request: .tcp(TunnelEndpoint(host: "localhost", port: fixture.echoPort))),
            .data(identifier: 5, payload: ByteBuffer(string: "early ")),
            .data(identifier: 5, payload: ByteBuffer(string: "bird")),
            .close(identifier: 5, direction: .write)
        )
        #expect(await peer.next() == .openResult(identifier: 5, result: .success))
        let (data, closedWith) = await peer.collectData(for: 5)
        #expect(data == ByteBuffer(string: "early bird"))
        #expect(closedWith == .write)
        await peer.close()
        await fixture.stop()
    }

    @Test func halfCloseFromTheClientThenTheIdentifierIsReusable() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await fixture.peer()
        for round in 0..<2 {
            #expect(try await open(peer, 9, "127.0.0.1", fixture.echoPort) == .success)
            let payload = LoopbackPeers.payload(300_000, seed: UInt8(round))
            try await peer.sendData(payload, for: 9)
            try await peer.send(.close(identifier: 9, direction: .write))
            let (data, closedWith) = await peer.collectData(for: 9)
            #expect(data == payload)
            #expect(closedWith == .write)
            // Both streams have ended: the server forgets the flow, so 9 opens again.
        }
        await peer.close()
        await fixture.stop()
    }

    @Test func halfCloseFromTheDestinationKeepsTheOtherDirection() async throws {
        let fixture = try await RawServerFixture.start()
        let received = NIOLockedValueBox<Int?>(nil)
        let speaker = try await DestinationServers.speaker(greeting: ByteBuffer(string: "hello"), received: received, group: fixture.group)
        let peer = try await fixture.peer()
        #expect(try await open(peer, 3, "127.0.0.1", speaker.localAddress?.port ?? 0) == .success)
        let (greeting, closedWith) = await peer.collectData(for: 3)
        #expect(greeting == ByteBuffer(string: "hello"))
        #expect(closedWith == .write)
        // The destination stopped writing but still reads: our bytes still arrive.
        try await peer.sendData(LoopbackPeers.payload(200_000), for: 3)
        try await peer.send(.close(identifier: 3, direction: .write))
        var count: Int?
        for _ in 0..<400 where count == nil {
            try await Task.sleep(for: .milliseconds(25))
            count = received.withLockedValue { $0 }
        }
        #expect(count == 200_000)
        try? await speaker.close()
        await peer.close()
        await fixture.stop()
    }

    @Test func aSlowDestinationIsSuspendedAndAPeerThatIgnoresItIsHeldBackNotCut() async throws {
        // The protocol's minimum allowance (1 MiB) keeps the test short.
        let fixture = try await RawServerFixture.start { $0.multiplexerLimits.suspendAllowance = 1024 * 1024 }
        let sink = try await DestinationServers.nonReading(group: fixture.group)
        let peer = try await fixture.peer()
        #expect(try await open(peer, 11, "127.0.0.1", sink.localAddress?.port ?? 0) == .success)
        var sent = 0
        var suspendedAt: Int?
        let chunk = ByteBuffer(repeating: 1, count: 32 * 1024)
        // Keep sending, ignoring suspend, while the tunnel takes it: once past the
        // allowance the server reads no more, so TCP stops us.
        while sent < 64 * 1024 * 1024 {
            guard peer.channel.isWritable else {
                try await Task.sleep(for: .milliseconds(200))
                if !peer.channel.isWritable { break }
                continue
            }
            try await peer.send(.data(identifier: 11, payload: chunk))
            sent += chunk.readableBytes
            if case .suspend(11)? = await peer.next(timeout: .milliseconds(1)) { suspendedAt = suspendedAt ?? sent }
        }
        #expect(suspendedAt != nil, "the server never suspended a flow whose destination does not read")
        #expect(sent < 32 * 1024 * 1024, "the server kept reading \(sent) bytes for a destination that reads nothing")
        // Held back, not cut off: no close for the flow, the tunnel stays.
        let closed = await peer.next(timeout: .seconds(2)) { message in
            if case .close(11, _) = message { return false }
            return true
        }
        #expect(closed == nil)
        #expect(peer.channel.isActive)
        // Suspend came well before the allowance ran out: no earlier than the socket buffers fill.
        #expect((suspendedAt ?? 0) < 8 * 1024 * 1024)
        // Only this tunnel waits: another one is served.
        let bystander = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
        #expect(await bystander.next() == .fetchConfiguration(identifier: 0, configuration: [:]))
        await bystander.close()
        try? await sink.close()
        await peer.close()
        await fixture.stop()
    }

    @Test func badInputIsAnsweredAsSpecifiedWhileOtherTunnelsKeepWorking() async throws {
        let fixture = try await RawServerFixture.start()
        // Like every client, the bystander speaks first at once (else the first-message timeout ends it).
        let bystander = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
        #expect(await bystander.next() == .fetchConfiguration(identifier: 0, configuration: [:]))
        let peer = try await fixture.peer()

        // Ignored or dropped: the tunnel stays up and answers the next request.
        try await peer.send(propertyList: .dictionary(["identifier": 1, "command": 99]))
        try await peer.send(propertyList: .dictionary(["command": 1]))
        try await peer.send(.data(identifier: 777, payload: ByteBuffer(string: "nobody")))
        try await peer.send(.openResult(identifier: 1, result: .success))
        try await peer.send(.authenticateResult(.success))
        try await peer.send(.packets(identifier: 1, packets: [TunnelPacket(bytes: ByteBuffer(hex: "4500"))]))
        try await peer.send(.close(identifier: 12345, direction: .all))
        try await peer.send(.authenticate(login: "anyone", password: "x"))
        #expect(await peer.next() == .authenticateResult(.success))
        try await peer.send(.fetchConfiguration(identifier: 0))
        #expect(await peer.next() == .fetchConfiguration(identifier: 0, configuration: [:]))

        // A payload that is not a dictionary ends this tunnel only.
        try await peer.send(propertyList: .array([]))
        #expect(await peer.waitForClose())

        try await bystander.send(.fetchConfiguration(identifier: 0))
        #expect(await bystander.next() == .fetchConfiguration(identifier: 0, configuration: [:]))

        // An oversized length is refused from the header alone.
        let greedy = try await fixture.peer()
        var header = ByteBuffer()
        header.writeInteger(UInt32(TunnelWireLimits.maximumFrameLength + 1), endianness: .little)
        try await greedy.sendRaw(header)
        #expect(await greedy.waitForClose())

        // Garbage ends the tunnel too.
        let garbage = try await fixture.peer()
        var frame = ByteBuffer()
        frame.writeInteger(UInt32(20), endianness: .little)
        frame.writeString("not a plist at all")
        try await garbage.sendRaw(frame)
        #expect(await garbage.waitForClose())

        try await bystander.send(.fetchConfiguration(identifier: 0))
        #expect(await bystander.next() == .fetchConfiguration(identifier: 0, configuration: [:]))
        await bystander.close()
        await fixture.stop()
    }

    @Test func aSilentClientIsCutOffAfterTheFirstMessageTimeout() async throws {
        let fixture = try await RawServerFixture.start { $0.firstMessageTimeout = .seconds(1) }
        let silent = try await fixture.peer()
        #expect(await silent.waitForClose(timeout: .seconds(5)))
        let talker = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0))
        #expect(await talker.next() != nil)
        try await Task.sleep(for: .milliseconds(1500))
        try await talker.send(.fetchConfiguration(identifier: 0))
        #expect(await talker.next() != nil)
        await talker.close()
        await fixture.stop()
    }

    @Test func dnsQueriesAreForwardedToTheResolverAndAnswered() async throws {
        // A stand-in resolver on loopback that answers each query with its own bytes.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let resolver = try await LoopbackPeers.udpEchoServer(group: group)
        let address = try #require(resolver.localAddress)
        let fixture = try await RawServerFixture.start { $0.dns = DNSForwarder(resolver: address, timeout: .seconds(5)) }
        let peer = try await fixture.peer()
        let query = ByteBuffer(hex: "beef 0100 0001 0000 0000 0000 07 6578616d706c65 03 636f6d 00 0001 0001")
        try await peer.send(.dns(identifier: 77, packet: query))
        #expect(await peer.next() == .dns(identifier: 77, packet: query, source: "127.0.0.1:\(address.port ?? 0)"))
        await peer.close()
        await fixture.stop()
        try? await resolver.close()
        try? await group.shutdownGracefully()
    }
}
