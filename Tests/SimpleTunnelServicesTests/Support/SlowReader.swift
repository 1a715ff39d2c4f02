import NIOCore
import NIOPosix

/// A destination that reads one small piece at a time on a timer, slower than
/// loopback delivers, until the client's FIN; it reports how many bytes came
/// and their SHA-256 (hex).
final class SlowReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    struct Received: Sendable, Equatable {
        var count: Int
        var sha256: String
    }

    private let interval: TimeAmount
    private let done: EventLoopPromise<Received>
    private let hasher = SHA256Hasher()
    private var count = 0
    private var ticker: RepeatedTask?

    init(interval: TimeAmount, done: EventLoopPromise<Received>) {
        self.interval = interval
        self.done = done
    }

    /// Listens on 127.0.0.1; each read takes at most `readSize` bytes, one every `interval`.
    static func listen(interval: TimeAmount, readSize: Int, done: EventLoopPromise<Received>, group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.socketOption(.so_rcvbuf), value: 64 * 1024)
            .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SlowReader(interval: interval, done: done))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    func channelActive(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBound.value.read()
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        count += bytes.readableBytes
        bytes.withUnsafeReadableBytes { hasher.update($0) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            finish()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
    }

    private func finish() {
        guard ticker != nil else { return }
        ticker?.cancel()
        ticker = nil
        let digest = hasher.finish().map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        done.succeed(Received(count: count, sha256: digest))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
