import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Server limits and the rest of B5", .timeLimit(.minutes(2)))
struct ServerLimitsTests {
    @Test func framesAndMessagesThatEndATunnel() async throws {
        let fixture = try await RawServerFixture.start()
        var tiny = ByteBuffer()
        tiny.writeInteger(UInt32(4), endianness: .little)
        let cases: [(String, ByteBuffer)] = [
            ("length below 5", tiny),
            ("missing command", Self.frame(.dictionary(["identifier": 1]))),
            ("command as a string", Self.frame(.dictionary(["identifier": 1, "command": .string("1")]))),
            ("command as a boolean", Self.frame(.dictionary(["identifier": 1, "command": .boolean(true)]))),
            ("payload that is a string", Self.frame(.string("hello"))),
        ]
        for (name, bytes) in cases {
            let peer = try await fixture.peer()
            try await peer.sendRaw(bytes)
            #expect(await peer.waitForClose(), "\(name) did not end the tunnel")
        }
        await fixture.stop()
    }

    @Test func mistypedKeysAreDroppedAndTheTunnelCarriesOn() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort))))
        #expect(await peer.next() == .openResult(identifier: 1, result: .success))
        try await peer.send(propertyList: .dictionary(["identifier": 1, "command": 1, "data": .string("not data")]))
        try await peer.send(propertyList: .dictionary(["identifier": 1, "command": 4, "close-type": 9]))
        try await peer.send(propertyList: .dictionary(["identifier": .string("1"), "command": 2]))
        try await peer.send(.data(identifier: 1, payload: ByteBuffer(string: "fine")), .close(identifier: 1, direction: .write))
        let (data, closedWith) = await peer.collectData(for: 1)
        #expect(data == ByteBuffer(string: "fine"))
        #expect(closedWith == .write)
        await peer.close()
        await fixture.stop()
    }

    @Test func flowsPerTunnelAreLimited() async throws {
        let fixture = try await RawServerFixture.start { $0.multiplexerLimits.maximumFlows = 3 }
        let peer = try await fixture.peer()
        for identifier in 1...3 {
            try await peer.send(.open(identifier: Int64(identifier), request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort))))
            #expect(await peer.next() == .openResult(identifier: Int64(identifier), result: .success))
        }
        try await peer.send(.open(identifier: 4, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort))))
        #expect(await peer.next() == .openResult(identifier: 4, result: .refused))
        // Closing one makes room again.
        try await peer.send(.close(identifier: 1, direction: .all))
        var open = 3
        for _ in 0..<200 where open > 2 {
            open = await fixture.server.status().totals.openFlows
            if open > 2 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(open == 2, "the closed flow is still counted")
        try await peer.send(.open(identifier: 5, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort))))
        #expect(await peer.next() == .openResult(identifier: 5, result: .success))
        await peer.close()
        await fixture.stop()
    }

    @Test func tunnelsPerServerAreLimited() async throws {
        let fixture = try await RawServerFixture.start { $0.maximumTunnels = 2 }
        let first = try await fixture.peer()
        let second = try await fixture.peer()
        for peer in [first, second] {
            try await peer.send(.fetchConfiguration(identifier: 0))
            #expect(await peer.next() != nil)
        }
        let third = try await fixture.peer()
        #expect(await third.waitForClose(), "a third tunnel was admitted")
        await first.close()
        #expect(await AdmissionPeers.eventually { fixture.server.admission.current.tunnels < 2 }, "the closed tunnel is still counted")
        let fourth = try await fixture.peer()
        try await fourth.send(.fetchConfiguration(identifier: 0))
        #expect(await fourth.next() != nil)
        await fixture.stop()
    }

    @Test func udpFlowsExpireWhenIdleNotFromCreation() async throws {
        let fixture = try await RawServerFixture.start { $0.multiplexerLimits.udpIdleTimeout = .seconds(2) }
        // A destination that, once it hears from the flow, keeps talking for 6 s (three times the
        // idle timeout) on its own event loop, then falls silent. Its 200 ms gaps leave a loaded
        // machine 1.8 s of slack before the flow would idle out between two datagrams.
        let chatter = try await DatagramBootstrap(group: fixture.group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ChattyDatagramHandler(interval: .milliseconds(200), count: 30))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let peer = try await fixture.peer()
        // Open and first datagram in one write, so a busy test thread cannot let the flow idle out first.
        try await peer.send(
            .open(identifier: 8, request: .udp),
            .data(identifier: 8, payload: ByteBuffer(string: "hello"), endpoint: TunnelEndpoint(host: "127.0.0.1", port: chatter.localAddress?.port ?? 0))
        )
        #expect(await peer.next() == .openResult(identifier: 8, result: .success))
        var datagrams = 0
        var closed = false
        while let message = await peer.next(timeout: .seconds(10)) {
            if case .data(8, _, _) = message { datagrams += 1 }
            if case .close(8, .all) = message { closed = true; break }
        }
        // Alive for every datagram of the 6 s, so not expired from creation; closed once idle.
        #expect(datagrams == 30)
        #expect(closed)
        await peer.close()
        try? await chatter.close()
        await fixture.stop()
    }

    @Test func sixtyFourMebibytesThroughAForwardArriveIntact() async throws {
        let fixture = try await TunnelFixture.start()
        let forwarder = try await fixture.forward()
        let payload = LoopbackPeers.payload(64 * 1024 * 1024, seed: 99)
        let echoed = try await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group)
        #expect(echoed.readableBytes == payload.readableBytes)
        #expect(echoed == payload)
        await fixture.stop()
    }

    static func frame(_ propertyList: PropertyListValue) -> ByteBuffer {
        let payload = BinaryPropertyListWriter.bytes(propertyList)
        var frame = ByteBuffer()
        frame.writeInteger(UInt32(payload.readableBytes + 4), endianness: .little)
        frame.writeImmutableBuffer(payload)
        return frame
    }
}

/// After the first datagram it receives, sends `count` datagrams to its sender, one per `interval`.
final class ChattyDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let interval: TimeAmount
    private let count: Int
    private var started = false

    init(interval: TimeAmount, count: Int) {
        self.interval = interval
        self.count = count
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !started else { return }
        started = true
        let peer = unwrapInboundIn(data).remoteAddress
        send(context: context, to: peer, remaining: count)
    }

    private func send(context: ChannelHandlerContext, to peer: SocketAddress, remaining: Int) {
        guard remaining > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: peer, data: ByteBuffer(string: "tick \(remaining)"))), promise: nil)
        context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            send(context: context, to: peer, remaining: remaining - 1)
        }
    }
}
