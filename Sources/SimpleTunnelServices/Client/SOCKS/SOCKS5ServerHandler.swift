import Logging
import NIOCore

/// Runs a SOCKS5 handshake on an accepted TCP connection and hands the
/// request to `onRequest`. The handler only carries out what
/// `SOCKS5ServerStateMachine` decides.
///
/// While a request is pending it issues no reads, so the client can push at
/// most what was already in flight (bounded by `maximumBufferedBytes`), and
/// it holds writes from later handlers so nothing overtakes the reply.
///
/// On success it writes the reply, passes any bytes the client pipelined
/// after its request on as an ordinary `channelRead`, and removes itself:
/// `onRequest` must add the handlers that take the application data before
/// its future succeeds. On failure it writes the error reply, if the
/// protocol has one, and closes the channel. If the channel closes while the
/// request is pending, the future's later result is ignored.
///
/// A client that half-closes right after its request (end of input while the
/// request is pending) keeps its connection only if the channel allows remote
/// half-closure; the end of input then follows the leftover bytes.
public final class SOCKS5ServerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Carries out a request on the client's channel's event loop; a failed
    /// future is answered with "general failure".
    public typealias RequestHandler = (SOCKS5Request, Channel) -> EventLoopFuture<SOCKS5Outcome>

    private var stateMachine: SOCKS5ServerStateMachine
    private let onRequest: RequestHandler
    private let handshakeTimeout: TimeAmount?
    private let logger: Logger
    private var handshakeTimer: Scheduled<Void>?
    private var readHeld = false
    private var heldWrites: [(data: NIOAny, promise: EventLoopPromise<Void>?)] = []

    /// - Parameters:
    ///   - maximumBufferedBytes: most bytes held before the reply; at least 262.
    ///   - handshakeTimeout: how long a client may take to send its greeting
    ///     and request, counted from when the channel is active; nil for no limit.
    public init(
        maximumBufferedBytes: Int = SOCKS5ServerStateMachine.defaultMaximumBufferedBytes,
        handshakeTimeout: TimeAmount? = .seconds(30),
        logger: Logger = Logger(label: "simpletunnel.socks", factory: { _ in SwiftLogNoOpLogHandler() }),
        onRequest: @escaping RequestHandler
    ) {
        self.stateMachine = SOCKS5ServerStateMachine(maximumBufferedBytes: maximumBufferedBytes)
        self.handshakeTimeout = handshakeTimeout
        self.logger = logger
        self.onRequest = onRequest
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startHandshakeTimer(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        startHandshakeTimer(context: context)
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        stateMachine.connectionClosed()
        stopHandshakeTimer()
        failHeldWrites(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        stopHandshakeTimer()
        failHeldWrites(ChannelError.ioOnClosedChannel)
    }

    public func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        if readHeld {
            readHeld = false
            context.read()
        }
        context.leavePipeline(removalToken: removalToken)
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        for action in stateMachine.receiveBytes(unwrapInboundIn(data)) {
            perform(action, context: context)
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let channelEvent = event as? ChannelEvent, channelEvent == .inputClosed else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // While a request is pending the end of input is kept, and delivered
        // after the leftover bytes once the handshake succeeds.
        if let action = stateMachine.receiveEndOfInput() {
            perform(action, context: context)
        }
    }

    // MARK: Outbound

    public func read(context: ChannelHandlerContext) {
        switch stateMachine.phase {
        case .handshaking:
            context.read()
        case .awaitingReply, .established, .failed:
            readHeld = true
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch stateMachine.phase {
        case .handshaking, .awaitingReply:
            heldWrites.append((data, promise))
        case .established:
            context.write(data, promise: promise)
        case .failed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    // MARK: Carrying out decisions

    private func perform(_ action: SOCKS5ServerStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .sendBytes(let bytes):
            context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        case .request(let request):
            stopHandshakeTimer()
            logger.debug("SOCKS5 request", metadata: ["socks.request": "\(request)"])
            onRequest(request, context.channel)
                .hop(to: context.eventLoop)
                .assumeIsolated()
                .whenComplete { result in
                    self.requestCompleted(result, context: context)
                }
        case .fail(let error, let replyBytes):
            logger.info(
                "SOCKS5 client refused: \(error)",
                metadata: ["socks.error": "\(error.kind)"]
            )
            close(context: context, after: replyBytes)
        }
    }

    private func requestCompleted(_ result: Result<SOCKS5Outcome, any Error>, context: ChannelHandlerContext) {
        let outcome: SOCKS5Outcome
        switch result {
        case .success(let value):
            outcome = value
        case .failure(let error):
            logger.warning("SOCKS5 request failed: \(error)")
            outcome = .failure(.generalFailure)
        }
        switch stateMachine.reply(outcome) {
        case .establish(let replyBytes, let leftover, let inputClosed):
            context.write(wrapOutboundOut(replyBytes), promise: nil)
            releaseHeldWrites(context: context)
            context.flush()
            if let leftover {
                context.fireChannelRead(wrapInboundOut(leftover))
                context.fireChannelReadComplete()
            }
            if inputClosed {
                context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .rejectAndClose(let replyBytes):
            logger.debug("SOCKS5 request refused", metadata: ["socks.reply": "\(outcome.reply)"])
            close(context: context, after: replyBytes)
        case .ignore:
            break
        }
    }

    private func close(context: ChannelHandlerContext, after replyBytes: ByteBuffer?) {
        stopHandshakeTimer()
        failHeldWrites(ChannelError.ioOnClosedChannel)
        guard let replyBytes else {
            context.close(promise: nil)
            return
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(replyBytes)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    private func startHandshakeTimer(context: ChannelHandlerContext) {
        guard let timeout = handshakeTimeout, handshakeTimer == nil, stateMachine.phase == .handshaking else { return }
        handshakeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            if let action = self.stateMachine.handshakeTimedOut(after: timeout) {
                self.perform(action, context: context)
            }
        }
    }

    private func stopHandshakeTimer() {
        handshakeTimer?.cancel()
        handshakeTimer = nil
    }

    private func releaseHeldWrites(context: ChannelHandlerContext) {
        let writes = heldWrites
        heldWrites = []
        for write in writes {
            context.write(write.data, promise: write.promise)
        }
    }

    private func failHeldWrites(_ error: any Error) {
        let writes = heldWrites
        heldWrites = []
        for write in writes {
            write.promise?.fail(error)
        }
    }
}

@available(*, unavailable)
extension SOCKS5ServerHandler: Sendable {}
