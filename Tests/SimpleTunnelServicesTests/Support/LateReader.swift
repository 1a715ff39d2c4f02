import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A destination that accepts, reads nothing for a while (so every buffer on
/// the way fills and the flow must be suspended), then reads everything until
/// the client's FIN and hands over what it got.
final class LateReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let delay: TimeAmount
    private let received: EventLoopPromise<ByteBuffer>
    private let started: NIOLockedValueBox<Bool>
    private var collected = ByteBuffer()

    init(delay: TimeAmount, received: EventLoopPromise<ByteBuffer>, started: NIOLockedValueBox<Bool>) {
        self.delay = delay
        self.received = received
        self.started = started
    }

    /// Listens on 127.0.0.1; `started` turns true when reading begins.
    static func listen(
        delay: TimeAmount, received: EventLoopPromise<ByteBuffer>, started: NIOLockedValueBox<Bool>, group: EventLoopGroup
    ) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.socketOption(.so_rcvbuf), value: 16 * 1024)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(LateReader(delay: delay, received: received, started: started))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    func channelActive(context: ChannelHandlerContext) {
        let started = self.started
        context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            started.withLockedValue { $0 = true }
            context.channel.setOption(.autoRead, value: true).whenComplete { _ in }
            context.read()
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        collected.writeBuffer(&bytes)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            received.succeed(collected)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.succeed(collected)
    }
}
