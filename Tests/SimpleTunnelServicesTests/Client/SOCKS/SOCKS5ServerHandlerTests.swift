import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

@Suite("SOCKS5 server handler")
struct SOCKS5ServerHandlerTests {
    typealias Bytes = SOCKS5ClientBytes

    static let connectRequest = Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv4([192, 0, 2, 1], port: 80))
    static let connectEndpoint = TunnelEndpoint(host: "192.0.2.1", port: 80)

    @Test func deliversTheRequestThenRepliesForwardsLeftoverAndLeaves() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Bytes.glued(Self.connectRequest, ByteBuffer(string: "early")))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.methodSelectedNoAuthentication)
        #expect(harness.requests.received == [.connect(Self.connectEndpoint)])
        #expect(harness.downstream.events.isEmpty)

        let bound = try SocketAddress(ipAddress: "127.0.0.1", port: 1080)
        harness.requests.promises[0].succeed(SOCKS5Outcome(reply: .succeeded, boundAddress: bound))

        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(hex: "05 00 00 01 7f000001 0438"))
        #expect(harness.downstream.events == [.read("early")])
        #expect(harness.socksHandlerIsInPipeline == false)
        _ = try harness.channel.finish()
    }

    @Test func repliesToUDPAssociateWithTheRelayAddress() throws {
        let harness = try Harness()
        let associate = Bytes.request(command: 0x03, addressType: 0x01, address: [0, 0, 0, 0], port: 0)
        try harness.channel.writeInbound(Bytes.glued(Bytes.noAuthenticationGreeting, associate))
        #expect(harness.requests.received == [.udpAssociate(clientHint: nil)])
        _ = try harness.channel.readOutbound(as: ByteBuffer.self)

        let relay = try SocketAddress(ipAddress: "::1", port: 40000)
        harness.requests.promises[0].succeed(.succeeded(boundAddress: relay))
        let expected = ByteBuffer(hex: "05 00 00 04 00000000000000000000000000000001 9c40")
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == expected)
        #expect(harness.socksHandlerIsInPipeline == false)
        _ = try harness.channel.finish()
    }

    @Test func answersASynchronouslyCompletedRequestInsideTheSameRead() throws {
        let harness = try Harness(answer: { request, channel in
            channel.eventLoop.makeSucceededFuture(.succeeded(boundAddress: nil))
        })
        try harness.channel.writeInbound(Bytes.glued(Self.connectRequest, ByteBuffer(string: "early")))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.methodSelectedNoAuthentication)
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(0x00))
        #expect(harness.downstream.events == [.read("early")])
        #expect(harness.socksHandlerIsInPipeline == false)
        _ = try harness.channel.finish()
    }

    @Test func readsNothingMoreWhileTheRequestIsPending() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Self.connectRequest)
        let readsBefore = harness.readCounter.count
        harness.channel.read()
        harness.channel.read()
        #expect(harness.readCounter.count == readsBefore)

        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        #expect(harness.readCounter.count == readsBefore + 1)
        harness.channel.read()
        #expect(harness.readCounter.count == readsBefore + 2)
        _ = try harness.channel.finish()
    }

    @Test func holdsWritesFromLaterHandlersUntilTheReplyIsOut() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Self.connectRequest)
        _ = try harness.channel.readOutbound(as: ByteBuffer.self)
        let early = harness.channel.writeAndFlush(ByteBuffer(string: "from the tunnel"))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == nil)

        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(0x00))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "from the tunnel"))
        try early.wait()
        _ = try harness.channel.finish()
    }

    @Test func deliversEndOfInputAfterTheLeftover() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Bytes.glued(Self.connectRequest, ByteBuffer(string: "last words")))
        harness.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(harness.downstream.events.isEmpty)

        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        #expect(harness.downstream.events == [.read("last words"), .inputClosed])
        _ = try harness.channel.finish()
    }

    @Test(arguments: [
        (TunnelConnectionOpenResult.refused, UInt8(0x05)), (.noSuchHost, 0x04), (.timeout, 0x06), (.invalidParameter, 0x01),
    ])
    func writesTheFailureReplyAndCloses(result: TunnelConnectionOpenResult, code: UInt8) throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Bytes.glued(Self.connectRequest, ByteBuffer(string: "early")))
        _ = try harness.channel.readOutbound(as: ByteBuffer.self)

        harness.requests.promises[0].succeed(SOCKS5Outcome(result, boundAddress: nil))
        harness.channel.embeddedEventLoop.run()
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(code))
        #expect(harness.channel.isActive == false)
        #expect(harness.downstream.events.isEmpty)
    }

    @Test func answersAFailedRequestWithGeneralFailure() throws {
        struct TunnelDown: Error {}
        let harness = try Harness()
        try harness.channel.writeInbound(Self.connectRequest)
        _ = try harness.channel.readOutbound(as: ByteBuffer.self)
        harness.requests.promises[0].fail(TunnelDown())
        harness.channel.embeddedEventLoop.run()
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(0x01))
        #expect(harness.channel.isActive == false)
    }

    @Test func refusesBindAndCloses() throws {
        let harness = try Harness()
        let bind = Bytes.request(command: 0x02, addressType: 0x01, address: [192, 0, 2, 1], port: 21)
        try harness.channel.writeInbound(Bytes.glued(Bytes.noAuthenticationGreeting, bind))
        harness.channel.embeddedEventLoop.run()
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.methodSelectedNoAuthentication)
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(0x07))
        #expect(harness.requests.received.isEmpty)
        #expect(harness.channel.isActive == false)
    }

    @Test func closesOnAClientThatDoesNotSpeakSOCKS5() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(ByteBuffer(string: "GET http://example.com/ HTTP/1.1\r\n\r\n"))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(harness.channel.isActive == false)
    }

    @Test func cutsOffAClientThatFloodsWhileItsRequestIsPending() throws {
        let harness = try Harness(maximumBufferedBytes: 1024)
        try harness.channel.writeInbound(Bytes.glued(Self.connectRequest, ByteBuffer(repeating: 0x41, count: 1000)))
        #expect(harness.channel.isActive)
        try harness.channel.writeInbound(ByteBuffer(repeating: 0x41, count: 100))
        harness.channel.embeddedEventLoop.run()
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.methodSelectedNoAuthentication)
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == Bytes.reply(0x01))
        #expect(harness.channel.isActive == false)

        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(harness.downstream.events.isEmpty)
    }

    @Test func ignoresTheOutcomeOfARequestWhoseConnectionClosed() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(Self.connectRequest)
        _ = try harness.channel.readOutbound(as: ByteBuffer.self)
        let heldWrite = harness.channel.writeAndFlush(ByteBuffer(string: "never sent"))
        try harness.channel.close().wait()
        #expect(throws: ChannelError.ioOnClosedChannel) { try heldWrite.wait() }

        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        harness.channel.embeddedEventLoop.run()
        #expect(try harness.channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(harness.downstream.events.isEmpty)
    }

    @Test func closesAClientThatIsTooSlowToAsk() throws {
        let harness = try Harness(handshakeTimeout: .seconds(5))
        try harness.channel.writeInbound(Bytes.noAuthenticationGreeting)
        harness.channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(harness.channel.isActive)
        harness.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(harness.channel.isActive == false)
    }

    @Test func theHandshakeTimeoutStopsOnceTheRequestIsIn() throws {
        let harness = try Harness(handshakeTimeout: .seconds(5))
        try harness.channel.writeInbound(Self.connectRequest)
        harness.channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(harness.channel.isActive)
        harness.requests.promises[0].succeed(.succeeded(boundAddress: nil))
        _ = try harness.channel.finish()
    }

    @Test func closesWhenTheClientGivesUpDuringTheHandshake() throws {
        let harness = try Harness()
        try harness.channel.writeInbound(ByteBuffer(bytes: [0x05, 0x01]))
        harness.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(harness.channel.isActive == false)
    }
}

/// An EmbeddedChannel with: read counter → SOCKS handler → recorder.
private struct Harness {
    let channel: EmbeddedChannel
    let readCounter = ReadCounter()
    let requests = RequestRecorder()
    let downstream = DownstreamRecorder()

    init(
        maximumBufferedBytes: Int = SOCKS5ServerStateMachine.defaultMaximumBufferedBytes,
        handshakeTimeout: TimeAmount? = nil,
        answer: SOCKS5ServerHandler.RequestHandler? = nil
    ) throws {
        let requests = self.requests
        let handler = SOCKS5ServerHandler(
            maximumBufferedBytes: maximumBufferedBytes,
            handshakeTimeout: handshakeTimeout,
            onRequest: { request, channel in
                requests.received.append(request)
                if let answer { return answer(request, channel) }
                let promise = channel.eventLoop.makePromise(of: SOCKS5Outcome.self)
                requests.promises.append(promise)
                return promise.futureResult
            }
        )
        channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([readCounter, handler, downstream])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    var socksHandlerIsInPipeline: Bool {
        (try? channel.pipeline.syncOperations.handler(type: SOCKS5ServerHandler.self)) != nil
    }
}

private final class RequestRecorder {
    var received: [SOCKS5Request] = []
    var promises: [EventLoopPromise<SOCKS5Outcome>] = []
}

/// What reaches the handler after SOCKS: application bytes and end of input.
private final class DownstreamRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    enum Event: Equatable {
        case read(String)
        case inputClosed
    }

    var events: [Event] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        events.append(.read(String(buffer: unwrapInboundIn(data))))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            events.append(.inputClosed)
        }
    }
}
