import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Glue between a local TCP socket and its flow: bytes read become the flow's
/// data, the flow's data is written to the socket, and reading follows the
/// multiplexer's decisions (backpressure, `suspend`, half-close).
///
/// The channel must allow remote half-closure, so that a FIN from the local
/// application arrives as `inputClosed` and the other direction keeps working.
public final class StreamFlowEndpoint: ChannelDuplexHandler, TCPFlowEndpoint {
    /// For a flow's socket: roomy enough that a destination reading at full
    /// speed does not flip writability (and so `suspend`/`resume`) constantly.
    public static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 256 * 1024, high: 1024 * 1024)
    /// How long a closed flow's unsent bytes may take to reach its socket
    /// before it is reset. What waits is at most the write watermark (1 MiB)
    /// plus what the peer sent past `suspend`: a destination that reads at
    /// all (300 kbit/s drains 1 MiB) takes it in time; one that reads nothing
    /// would otherwise keep the socket and its memory forever.
    public static let defaultDrainTimeout: TimeAmount = .seconds(30)

    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Nil once detached: the identifier may name another flow by then.
    private var reporter: FlowReporter?

    private var context: ChannelHandlerContext?
    private var readingEnabled = false
    private var readPending = false
    private var inputClosed = false
    private var closing = false
    private let drainTimeout: TimeAmount
    /// Set while a closed flow's unsent bytes drain; resets the socket when it fires.
    private var drainLimit: Scheduled<Void>?
    private var socketClosed = false
    /// Set by `detach`: run once the socket has closed.
    private var whenClosed: (() -> Void)?

    public init(reporter: FlowReporter, drainTimeout: TimeAmount = defaultDrainTimeout) {
        self.reporter = reporter
        self.drainTimeout = drainTimeout
    }

    // MARK: TCPFlowEndpoint

    public func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        guard let context else { return }
        // Bytes that will wait (the destination reads slower than the peer
        // sends) leave the frame they came in: as a slice they would keep the
        // whole decrypted read buffer alive, beyond what the budgets count.
        let kept = context.channel.isWritable ? data : context.channel.allocator.buffer(buffer: data)
        context.write(wrapOutboundOut(kept), promise: nil)
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

    /// Closes once everything written has gone, or resets the socket when
    /// that takes longer than the drain timeout.
    public func close() {
        guard !closing else { return }
        closing = true
        readingEnabled = false
        guard let context else { return }
        if !Self.hasNothingBuffered(context) {
            drainLimit = context.eventLoop.assumeIsolated().scheduleTask(in: drainTimeout) { [weak self] in
                self?.abort()
            }
        }
        afterPendingWrites { [weak self] context in
            self?.drainLimit?.cancel()
            context.close(promise: nil)
        }
    }

    /// Closes now, discarding what is unsent: with SO_LINGER {on, 0 s} the
    /// kernel sends RST instead of FIN and keeps nothing for the destination.
    public func abort() {
        closing = true
        readingEnabled = false
        drainLimit?.cancel()
        drainLimit = nil
        guard let context else { return }
        // Before the close: on the event loop the option is set at once.
        _ = (context.channel as? SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        context.close(promise: nil)
    }

    public func detach(whenClosed closed: @escaping () -> Void) {
        reporter = nil
        if socketClosed || context == nil {
            closed()
        } else {
            whenClosed = closed
        }
    }

    /// Runs `body` once everything written so far has gone: NIO's close fails
    /// pending writes, and the bytes a peer sent before closing must arrive.
    private func afterPendingWrites(_ body: @escaping (ChannelHandlerContext) -> Void) {
        guard let context else { return }
        // Usually everything has gone already (every flow closes this way): then
        // act at once rather than send an empty write through NIO to find out.
        if Self.hasNothingBuffered(context) {
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

    private static func hasNothingBuffered(_ context: ChannelHandlerContext) -> Bool {
        (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0
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
        reporter?.didRead(unwrapInboundIn(data), from: nil)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            reporter?.didReadEndOfFile()
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        reporter?.writabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        drainLimit?.cancel()
        drainLimit = nil
        socketClosed = true
        if let whenClosed {
            self.whenClosed = nil
            whenClosed()
        }
        reporter?.didClose()
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A reset or a failed write: the socket is unusable; closing reports it.
        context.close(promise: nil)
    }
}
