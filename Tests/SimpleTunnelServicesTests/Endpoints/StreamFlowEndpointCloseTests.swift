import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

#if canImport(Glibc)
import Glibc
#endif

@Suite("A TCP flow's socket: drain on close, reset on abort", .timeLimit(.minutes(2)))
struct StreamFlowEndpointCloseTests {
    /// A flow socket connected to `port`, its endpoint reached through `onEndpoint` on the event loop.
    static func connectFlow(to port: Int, drainTimeout: TimeAmount, group: EventLoopGroup) async throws -> Channel {
        try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try FlowSocketOptions.apply(to: channel)
                    try channel.pipeline.syncOperations.addHandler(StreamFlowEndpoint(reporter: .unheard, drainTimeout: drainTimeout))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
    }

    @discardableResult
    static func onEndpoint<Result: Sendable>(_ channel: Channel, _ body: @escaping @Sendable (StreamFlowEndpoint) throws -> Result) async throws -> Result {
        try await channel.eventLoop.submit {
            try body(try channel.pipeline.syncOperations.handler(type: StreamFlowEndpoint.self))
        }.get()
    }

    static func closes(_ channel: Channel, within limit: TimeAmount) async -> Bool {
        let closed = NIOLockedValueBox(false)
        channel.closeFuture.whenComplete { _ in closed.withLockedValue { $0 = true } }
        let deadline = NIODeadline.now() + limit
        while NIODeadline.now() < deadline {
            if closed.withLockedValue({ $0 }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return closed.withLockedValue({ $0 })
    }

    /// How a destination saw its connection end after `body` ran on the flow's endpoint.
    static func ending(after body: @escaping @Sendable (StreamFlowEndpoint) throws -> Void) async throws -> EndingRecorder.Ending? {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let recorder = EndingRecorder()
        let destination = try await recorder.listen(group: group)
        let flow = try await connectFlow(to: destination.localAddress?.port ?? 0, drainTimeout: .seconds(30), group: group)
        try await recorder.waitForConnection()
        try await onEndpoint(flow, body)
        let ending = try await recorder.ending()
        try await destination.close()
        try await group.shutdownGracefully()
        return ending
    }

    @Test func abortResetsTheConnection() async throws {
        let ending = try await Self.ending { endpoint in
            endpoint.write(ByteBuffer(string: "unsent"), to: nil)
            endpoint.abort()
        }
        #expect(ending == .reset)
    }

    @Test func closeEndsCleanlyWhenEverythingWasSent() async throws {
        let ending = try await Self.ending { endpoint in
            endpoint.write(ByteBuffer(string: "all of it"), to: nil)
            endpoint.flush()
            endpoint.close()
        }
        #expect(ending == .finished(bytes: 9))
    }

    @Test func aDestinationThatNeverReadsIsResetAfterTheDrainLimit() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let destination = try await DestinationServers.nonReading(group: group)
        let flow = try await Self.connectFlow(to: destination.localAddress?.port ?? 0, drainTimeout: .seconds(1), group: group)
        let buffered = try await Self.onEndpoint(flow) { endpoint in
            // More than the kernel's buffers on both sides take: some stays in NIO's.
            endpoint.write(ByteBuffer(repeating: 1, count: 12 << 20), to: nil)
            endpoint.flush()
            defer { endpoint.close() }
            return try flow.syncOptions?.getOption(.bufferedWritableBytes) ?? 0
        }
        #expect(buffered > 0, "everything fit in the kernel's buffers: the test proves nothing")
        // Without the limit the socket would wait for the destination (until
        // TCP_USER_TIMEOUT gives up on its zero window, 110 s).
        #expect(await Self.closes(flow, within: .seconds(30)))
        try await destination.close()
        try await group.shutdownGracefully()
    }

    @Test func flowSocketsCarryAUserTimeoutInLineWithTheKeepalive() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let destination = try await LoopbackPeers.echoServer(group: group)
        let flow = try await Self.connectFlow(to: destination.localAddress?.port ?? 0, drainTimeout: .seconds(30), group: group)
        let option = ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_USER_TIMEOUT))
        let timeout = try await flow.eventLoop.submit { try flow.syncOptions?.getOption(option) }.get()
        // The time the tunnel's keepalive takes to give up on a silent peer.
        #expect(timeout == 110_000)
        try await flow.close()
        try await destination.close()
        try await group.shutdownGracefully()
    }
}

/// A destination that says how its one connection ended: a clean FIN after
/// some bytes, or a reset.
final class EndingRecorder: Sendable {
    enum Ending: Equatable, Sendable {
        case finished(bytes: Int)
        case reset
    }

    private let state = NIOLockedValueBox<(connected: Bool, ending: Ending?)>((false, nil))

    func listen(group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(recorder: self))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    func waitForConnection() async throws {
        try await poll { $0.connected }
    }

    func ending() async throws -> Ending? {
        try await poll { $0.ending != nil }
        return state.withLockedValue { $0.ending }
    }

    private func poll(_ done: @Sendable ((connected: Bool, ending: Ending?)) -> Bool) async throws {
        let deadline = NIODeadline.now() + .seconds(20)
        while NIODeadline.now() < deadline, !state.withLockedValue({ done($0) }) {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    fileprivate func connected() { state.withLockedValue { $0.connected = true } }

    fileprivate func ended(_ ending: Ending) {
        state.withLockedValue { $0.ending = $0.ending ?? ending }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let recorder: EndingRecorder
        var bytes = 0

        init(recorder: EndingRecorder) { self.recorder = recorder }

        func channelActive(context: ChannelHandlerContext) {
            recorder.connected()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytes
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case ChannelEvent.inputClosed = event {
                recorder.ended(.finished(bytes: bytes))
                context.close(promise: nil)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            if let error = error as? IOError, error.errnoCode == ECONNRESET {
                recorder.ended(.reset)
            }
            context.close(promise: nil)
        }
    }
}
