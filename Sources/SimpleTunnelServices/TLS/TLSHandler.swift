import Logging
import NIOCore
import NIOTLS

/// TLS for one connection, client or server, sitting directly on the socket:
/// ciphertext below, plaintext above. The OpenSSL side lives in `TLSEngine`;
/// this type holds only pipeline logic, driven by one `State`.
///
/// - Writes made before the handshake completes are queued, then sent together.
/// - Afterwards writes are encrypted on flush, packed into full TLS records
///   (small writes gathered, large ones encrypted in place) and coalesced into
///   one ciphertext buffer per flush (split every `batchSize` bytes, which
///   also applies to unflushed writes so the channel's writability sees them).
/// - Plaintext is delivered once per read burst, and still delivered when the
///   peer closes right after sending it.
/// - `close` sends close_notify before closing the socket; a received
///   close_notify is answered and closes the channel.
/// - Fires `TLSUserEvent.handshakeCompleted` when up and `.shutdownCompleted`
///   after a clean close. Failures reach `errorCaught` as `TLSError` and close
///   the channel; the connection ending without close_notify is
///   `TLSError.uncleanShutdown`, and fails writes still queued.
///
/// Not removable: TLS cannot be unwrapped mid-connection.
public final class TLSHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State {
        /// Channel not active yet.
        case idle
        case handshaking
        case active
        /// Our close_notify is queued or sent. `pendingClose` is what is left
        /// to do before the socket closes; nil once that is underway.
        case closing(pendingClose: PendingClose?)
        case closed
    }

    private struct PendingClose {
        var mode: CloseMode
        var promise: EventLoopPromise<Void>?
        /// Closes the socket anyway if the peer never drains our close_notify.
        var timeout: Scheduled<Void>
    }

    /// Plaintext is encrypted and handed down in batches of about this size:
    /// buffers stay bounded, and once this much is written (even unflushed) it
    /// moves into the channel's own outbound buffer, where writability sees it.
    /// The most a fast link needs; the tunnel lowers `batchSize` to its link's pace.
    public static let maximumBatchSize = 64 * 1024

    /// The batch size now, between one byte and `maximumBatchSize`: set by
    /// whoever knows the link's rate, so that what waits here unflushed, unseen
    /// by the channel's writability, is no more than the link takes in a few
    /// milliseconds. Below a record it moves partial records too.
    public var batchSize: Int {
        get { batch }
        set { batch = max(1, min(newValue, Self.maximumBatchSize)) }
    }
    private var batch = TLSHandler.maximumBatchSize

    /// Plaintext written and not yet encrypted and handed down, flushed or
    /// not: part of what waits in front of the link.
    public var bufferedPlaintextBytes: Int { pendingWrites.byteCount }
    /// TLS's largest record plaintext: writes are packed into records this full.
    static let recordSize = 16_384

    private var state: State = .idle
    /// Set while encrypting and emitting user data. Handing ciphertext down can
    /// call back into us (writability changes); writes, flushes and a close
    /// arriving then are queued so they keep their order after the data.
    private var isEncrypting = false
    private var flushRequestedWhileEncrypting = false
    private var closeRequestedWhileEncrypting: (mode: CloseMode, promise: EventLoopPromise<Void>?)?
    private var engine: TLSEngine?
    private var pendingWrites = PendingWrites()
    private let closeTimeout: TimeAmount
    private let logger: Logger?

    /// Version, cipher and peer identity; set once the handshake completes.
    public private(set) var sessionInfo: TLSSessionInfo?

    /// True once the OpenSSL connection object has been freed (after close or removal).
    public var hasReleasedSSL: Bool { engine == nil }

    /// `serverName` (client role) overrides the configuration's for this connection.
    public init(
        context: TLSContext,
        serverName: String? = nil,
        closeTimeout: TimeAmount = .seconds(5),
        logger: Logger? = nil
    ) throws(TLSError) {
        self.engine = try TLSEngine(context: context, serverName: serverName)
        self.closeTimeout = closeTimeout
        self.logger = logger
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            startHandshake(context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        pendingWrites.failAll(TLSError.alreadyClosed)
        if case .closing(let pendingClose?) = state {
            pendingClose.timeout.cancel()
            pendingClose.promise?.fail(TLSError.alreadyClosed)
        }
        state = .closed
        releaseEngine()
    }

    public func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        startHandshake(context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        // Plaintext that arrived before the connection ended is still delivered.
        processInbound(context: context)
        switch state {
        case .idle:
            pendingWrites.failAll(TLSError.closedBeforeHandshake)
        case .handshaking:
            pendingWrites.failAll(TLSError.closedBeforeHandshake)
            context.fireErrorCaught(TLSError.closedBeforeHandshake)
        case .active:
            pendingWrites.failAll(TLSError.uncleanShutdown)
            context.fireErrorCaught(TLSError.uncleanShutdown)
        case .closing(let pendingClose):
            pendingWrites.failAll(TLSError.alreadyClosed)
            if let pendingClose {
                pendingClose.timeout.cancel()
                pendingClose.promise?.succeed()
            }
        case .closed:
            pendingWrites.failAll(TLSError.alreadyClosed)
        }
        state = .closed
        releaseEngine()
        context.fireChannelInactive()
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        engine?.receiveCiphertext(unwrapInboundIn(data))
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        processInbound(context: context)
        context.fireChannelReadComplete()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            processInbound(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Outbound

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch state {
        case .idle, .handshaking:
            pendingWrites.append(unwrapOutboundIn(data), promise: promise)
        case .active:
            pendingWrites.append(unwrapOutboundIn(data), promise: promise)
            if pendingWrites.byteCount >= batch {
                // Written but not flushed: the ciphertext waits unflushed in the channel.
                pendingWrites.markAllFlushed()
                encryptFlushedWrites(context: context, flush: .never)
            }
        case .closing, .closed:
            promise?.fail(TLSError.alreadyClosed)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        switch state {
        case .idle, .handshaking:
            pendingWrites.markAllFlushed()
        case .active:
            pendingWrites.markAllFlushed()
            encryptFlushedWrites(context: context)
        case .closing, .closed:
            break
        }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .input {
            context.close(mode: mode, promise: promise)
            return
        }
        switch state {
        case .idle, .handshaking:
            state = .closed
            pendingWrites.failAll(TLSError.closedBeforeHandshake)
            context.close(mode: mode, promise: promise)
        case .active where isEncrypting:
            if closeRequestedWhileEncrypting != nil {
                if let promise { context.channel.closeFuture.cascade(to: promise) }
            } else {
                closeRequestedWhileEncrypting = (mode, promise)
            }
        case .active:
            // Unflushed writes are dropped, as a plain socket would drop them.
            pendingWrites.failAll(TLSError.alreadyClosed)
            sendCloseNotify(context: context, mode: mode, promise: promise)
        case .closing(.some):
            // A repeated close must not cut off the close_notify (and data) still being written.
            if let promise {
                context.channel.closeFuture.cascade(to: promise)
            }
        case .closing(.none), .closed:
            context.close(mode: mode, promise: promise)
        }
    }

    // MARK: Handshake

    private func startHandshake(context: ChannelHandlerContext) {
        guard case .idle = state else { return }
        state = .handshaking
        advanceHandshake(context: context)
    }

    private func advanceHandshake(context: ChannelHandlerContext) {
        guard case .handshaking = state, let engine else { return }
        let step = engine.handshake()
        sendCiphertext(context: context, completing: [])
        switch step {
        case .incomplete:
            context.read()
        case .complete:
            state = .active
            sessionInfo = engine.sessionInfo()
            if let info = sessionInfo {
                logger?.debug(
                    "TLS handshake completed",
                    metadata: [
                        "tls.version": "\(info.protocolVersion)", "tls.cipher": "\(info.cipher)",
                        "tls.peer": "\(info.peerCertificateSubject ?? "none")",
                    ])
            }
            // Writes queued during the handshake go before anything written in reaction to the event.
            encryptFlushedWrites(context: context)
            context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
            if let info = sessionInfo {
                context.fireUserInboundEventTriggered(TLSSessionEstablishedEvent(session: info))
            }
        case .failed(let error):
            fail(context: context, error: error)
        }
    }

    // MARK: Data

    private func processInbound(context: ChannelHandlerContext) {
        switch state {
        case .handshaking:
            advanceHandshake(context: context)
            guard case .active = state else { return }
            decryptAndDeliver(context: context)
        case .active, .closing:
            decryptAndDeliver(context: context)
        case .idle, .closed:
            return
        }
        if case .active = state, pendingWrites.hasFlushed {
            encryptFlushedWrites(context: context)
        }
    }

    /// Everything decryptable now goes up in one buffer.
    private func decryptAndDeliver(context: ChannelHandlerContext) {
        guard let engine else { return }
        let available = engine.bufferedCiphertextCount + engine.bufferedPlaintextCount
        guard available > 0 else { return }
        // Plaintext never exceeds the ciphertext carrying it; the slack is one record.
        let recordSize = Self.recordSize
        var plaintext = context.channel.allocator.buffer(capacity: available + recordSize)
        var outcome: TLSEngine.ReadResult = .wouldBlock
        reading: while true {
            plaintext.writeWithUnsafeMutableBytes(minimumWritableBytes: recordSize) { space in
                outcome = engine.read(into: space)
                if case .bytes(let count) = outcome { return count }
                return 0
            }
            switch outcome {
            case .bytes: continue reading
            case .wouldBlock, .closeNotify, .failed: break reading
            }
        }
        if plaintext.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(plaintext))
        }
        switch outcome {
        case .bytes, .wouldBlock:
            // Post-handshake messages (e.g. a key update) may need an answer.
            sendCiphertext(context: context, completing: [])
        case .closeNotify:
            receivedCloseNotify(context: context)
        case .failed(let error):
            fail(context: context, error: error)
        }
    }

    /// Encrypts the flushed writes, coalesced into as few buffers as
    /// `batchSize` allows; `flush` says whether the channel is flushed after.
    private func encryptFlushedWrites(context: ChannelHandlerContext, flush: FlushPolicy = .always) {
        if isEncrypting {
            // Re-entered from a callback: the running loop picks the writes up.
            if flush == .always { flushRequestedWhileEncrypting = true }
            return
        }
        isEncrypting = true
        // Before the user's flush, a last partial record waits for more writes.
        var finished = encryptAndEmitFlushedWrites(context: context, wholeRecordsOnly: flush == .never && batch >= Self.recordSize)
        if finished && flush == .never && flushRequestedWhileEncrypting {
            // The user flushed meanwhile: the partial record goes too.
            finished = encryptAndEmitFlushedWrites(context: context, wholeRecordsOnly: false)
        }
        isEncrypting = false
        if finished && (flush == .always || flushRequestedWhileEncrypting) {
            context.flush()
        }
        flushRequestedWhileEncrypting = false
        if let close = closeRequestedWhileEncrypting {
            closeRequestedWhileEncrypting = nil
            self.close(context: context, mode: close.mode, promise: close.promise)
        }
    }

    /// The loop behind `encryptFlushedWrites`, unflushed; false if the connection failed.
    private func encryptAndEmitFlushedWrites(context: ChannelHandlerContext, wholeRecordsOnly: Bool) -> Bool {
        guard let engine else { return false }
        var completed: [EventLoopPromise<Void>] = []
        while let chunk = pendingWrites.nextFlushedChunk(
            recordSize: Self.recordSize, maximum: batch, wholeRecordsOnly: wholeRecordsOnly)
        {
            switch engine.write(chunk.plaintext) {
            case .complete:
                completed.append(contentsOf: chunk.promises)
            case .incomplete:
                // Cannot happen (the window BIO takes everything, renegotiation is off); retried after the next read if it does.
                pendingWrites.pushBackFlushed(chunk.plaintext, promise: Self.combine(chunk.promises, on: context.eventLoop))
                sendCiphertext(context: context, completing: completed, flush: .never)
                return true
            case .failed(let error):
                for promise in chunk.promises { promise.fail(error) }
                sendCiphertext(context: context, completing: completed, flush: .never)
                fail(context: context, error: error)
                return false
            }
            if engine.bufferedOutgoingCiphertextCount >= batch {
                sendCiphertext(context: context, completing: completed, flush: .never)
                completed = []
            }
        }
        sendCiphertext(context: context, completing: completed, flush: .never)
        return true
    }

    private enum FlushPolicy {
        /// The user flushed: flush even with nothing new, earlier batches may wait unflushed.
        case always
        /// Our own messages (handshake, alerts, close_notify): flush what we wrote.
        case ifWritten
        /// A batch of written-but-unflushed user data.
        case never
    }

    /// Writes all ciphertext OpenSSL has produced, as one buffer.
    private func sendCiphertext(
        context: ChannelHandlerContext, completing promises: [EventLoopPromise<Void>], flush: FlushPolicy = .ifWritten
    ) {
        guard let ciphertext = engine?.takeCiphertext() else {
            for promise in promises { promise.succeed() }
            if flush == .always { context.flush() }
            return
        }
        context.write(wrapOutboundOut(ciphertext), promise: Self.combine(promises, on: context.eventLoop))
        if flush != .never { context.flush() }
    }

    /// One promise that completes all of `promises`; nil for none.
    private static func combine(_ promises: [EventLoopPromise<Void>], on loop: EventLoop) -> EventLoopPromise<Void>? {
        switch promises.count {
        case 0:
            return nil
        case 1:
            return promises[0]
        default:
            let combined = loop.makePromise(of: Void.self)
            combined.futureResult.whenComplete { result in
                for promise in promises { promise.completeWith(result) }
            }
            return combined
        }
    }

    // MARK: Closing

    private func sendCloseNotify(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard let engine else {
            context.close(mode: mode, promise: promise)
            return
        }
        if case .failed(let error) = engine.shutdown() {
            logger?.debug("TLS close_notify could not be queued", metadata: ["error": "\(error)"])
        }
        let loop = context.eventLoop.assumeIsolated()
        let timeout = loop.scheduleTask(in: closeTimeout) { [self] in
            finishClose(context: context)
        }
        state = .closing(pendingClose: PendingClose(mode: mode, promise: promise, timeout: timeout))
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            finishClose(context: context)
        }
        sendCiphertext(context: context, completing: [written])
    }

    /// Closes the socket once our close_notify is on its way (or timed out).
    private func finishClose(context: ChannelHandlerContext) {
        guard case .closing(let pendingClose?) = state else { return }
        pendingClose.timeout.cancel()
        state = .closing(pendingClose: nil)
        context.close(mode: pendingClose.mode, promise: pendingClose.promise)
    }

    /// The peer ended the session cleanly: answer in kind and close.
    private func receivedCloseNotify(context: ChannelHandlerContext) {
        switch state {
        case .handshaking, .active:
            _ = engine?.shutdown()
            state = .closing(pendingClose: nil)
            pendingWrites.failAll(TLSError.alreadyClosed)
            sendCiphertext(context: context, completing: [])
            context.fireUserInboundEventTriggered(TLSUserEvent.shutdownCompleted)
            context.close(promise: nil)
        case .closing(let pendingClose):
            context.fireUserInboundEventTriggered(TLSUserEvent.shutdownCompleted)
            if pendingClose != nil {
                finishClose(context: context)
            }
        case .idle, .closed:
            break
        }
    }

    private func fail(context: ChannelHandlerContext, error: TLSError) {
        if case .closed = state { return }
        // Any alert OpenSSL queued tells the peer why.
        sendCiphertext(context: context, completing: [])
        if case .closing(let pendingClose?) = state {
            pendingClose.timeout.cancel()
            pendingClose.promise?.fail(error)
        }
        state = .closed
        pendingWrites.failAll(error)
        logger?.debug("TLS failed", metadata: ["error": "\(error)"])
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    private func releaseEngine() {
        engine?.release()
        engine = nil
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
