import NIOCore

/// Glue between a local TCP socket and its flow: bytes read become the flow's
/// data, the flow's data is written to the socket, and reading follows the
/// multiplexer's decisions (backpressure, `suspend`, half-close).
///
/// The channel must allow remote half-closure, so that a FIN from the local
/// application arrives as `inputClosed` and the other direction keeps working.
public final class StreamFlowEndpoint: ChannelDuplexHandler, FlowEndpoint {
    /// For a flow's socket: roomy enough that a destination reading at full
    /// speed does not flip writability (and so `suspend`/`resume`) constantly.
    public static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 256 * 1024, high: 1024 * 1024)

    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Set once the flow's identifier is known (a client learns it when it opens).
    public var identifier: TunnelConnectionIdentifier = 0
    public weak var sink: FlowEventSink?

    private var context: ChannelHandlerContext?
    private var readingEnabled = false
    private var readPending = false
    private var inputClosed = false
    private var closing = false

    public init(identifier: TunnelConnectionIdentifier = 0, sink: FlowEventSink? = nil) {
        self.identifier = identifier
        self.sink = sink
    }

    // MARK: FlowEndpoint

    public func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        context?.write(wrapOutboundOut(data), promise: nil)
    }

    public func flush() {
        context?.flush()
    }

    public func setReading(_ enabled: Bool) {
        readingEnabled = enabled
        if enabled, readPending, let context {
            readPending = false
            context.read()
        }
    }

    public func shutdownOutput() {
        afterPendingWrites { [weak self] context in
            // After input EOF NIO would escalate an output shutdown to a full
            // close anyway; both streams are over then.
            let inputClosed = self?.inputClosed ?? true
            context.close(mode: inputClosed ? .all : .output, promise: nil)
        }
    }

    public func close() {
        guard !closing else { return }
        closing = true
        readingEnabled = false
        afterPendingWrites { context in
            context.close(promise: nil)
        }
    }

    /// Runs `body` once everything written so far has gone: NIO's close fails
    /// pending writes, and the bytes a peer sent before closing must arrive.
    private func afterPendingWrites(_ body: @escaping (ChannelHandlerContext) -> Void) {
        guard let context else { return }
        // Usually everything has gone already (every flow closes this way): then
        // act at once rather than send an empty write through NIO to find out.
        if let buffered = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes), buffered == 0 {
            body(context)
            return
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        promise.futureResult.assumeIsolated().whenComplete { [weak self] _ in
            guard let context = self?.context else { return }
            body(context)
        }
    }

    // MARK: Pipeline

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    public func read(context: ChannelHandlerContext) {
        if readingEnabled {
            context.read()
        } else {
            readPending = true
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sink?.flow(identifier, didRead: unwrapInboundIn(data), from: nil)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            sink?.flowDidReadEndOfFile(identifier)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        sink?.flow(identifier, writabilityChanged: context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        sink?.flowDidClose(identifier)
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A reset or a failed write: the socket is unusable; closing reports it.
        context.close(promise: nil)
    }
}
