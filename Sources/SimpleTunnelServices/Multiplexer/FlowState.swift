import NIOCore

/// One logical connection's state, free of I/O: where it is in its life, which
/// of its two streams still run (PROTOCOL.md A4 "Half-close"), and its flow
/// control. The multiplexer performs the effects these transitions return.
struct FlowState {
    enum Kind: Sendable, Hashable {
        case tcp, udp, ip

        init(_ request: TunnelOpenRequest) {
            switch request {
            case .tcp: self = .tcp
            case .udp: self = .udp
            case .ip: self = .ip
            }
        }
    }

    enum Phase {
        /// Server: connecting. Data from the peer waits here (PROTOCOL.md A6).
        case opening(early: [ByteBuffer], earlyBytes: Int)
        /// Client: `open` sent, local socket not read until the result.
        case awaitingOpenResult
        case open
        /// Server: the peer closed the flow while it was still connecting.
        case cancelled
    }

    let kind: Kind
    var phase: Phase
    var endpoint: FlowEndpoint?

    /// Local-to-peer stream: we read the local socket and send `data`.
    private(set) var sending = true
    /// Peer-to-local stream: the peer sends `data`, we write the local socket.
    private(set) var receiving = true

    /// The peer asked us to stop sending (`suspend`).
    var peerSuspended = false
    /// We asked the peer to stop sending; bytes it sent since then.
    private(set) var suspendSent = false
    private(set) var bytesSinceSuspend = 0
    /// Reading paused because this flow's queue is above its high watermark.
    private(set) var queueFull = false
    /// In the scheduler's round of flows with something to send.
    var isScheduled = false

    var queue = FlowOutboundQueue()
    /// Whether the endpoint was last told to read.
    var readingEnabled = false
    /// Last data in either direction, for idle expiry of UDP flows.
    var lastActivity: NIODeadline

    init(kind: Kind, phase: Phase, now: NIODeadline) {
        self.kind = kind
        self.phase = phase
        self.lastActivity = now
    }

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    var isAwaitingOpenResult: Bool {
        if case .awaitingOpenResult = phase { return true }
        return false
    }

    /// Both streams have ended: once its queue is sent, the flow is forgotten.
    var isFinished: Bool { !sending && !receiving }

    /// Client: data sent before the server answered the open. A server keeps
    /// up to 256 KiB of it (PROTOCOL.md A6), so a request need not wait a round trip.
    private(set) var sentBeforeOpen = 0

    mutating func recordSent(_ count: Int) {
        if isAwaitingOpenResult { sentBeforeOpen += count }
    }

    /// Bytes that may go to the peer now: any once open; before, for a TCP
    /// flow, what the early-data allowance leaves.
    func sendableBytes(limits: TunnelMultiplexer.Limits) -> Int {
        if isOpen { return Int.max }
        guard isAwaitingOpenResult, kind == .tcp else { return 0 }
        return max(0, limits.earlyDataAllowance - sentBeforeOpen)
    }

    /// Whether the local socket should be read now.
    func wantsReading(tunnelWritable: Bool, limits: TunnelMultiplexer.Limits = .init()) -> Bool {
        let phaseAllows = isOpen || (sendableBytes(limits: limits) > queue.bufferedBytes)
        return phaseAllows && sending && !peerSuspended && !queueFull && tunnelWritable
    }

    // MARK: Data from the peer

    enum InboundDataVerdict: Equatable {
        case deliver
        /// Kept in the state until the open completes.
        case keptUntilOpen
        /// After a close, or for a flow that cannot take it: harmless, dropped.
        case drop
        /// Past the allowance after `suspend`, or too much before the open completed.
        case abusive
    }

    mutating func receiveData(_ data: ByteBuffer, limits: TunnelMultiplexer.Limits, now: NIODeadline) -> InboundDataVerdict {
        lastActivity = now
        switch phase {
        case .opening(var early, let earlyBytes):
            guard receiving else { return .drop }
            guard earlyBytes + data.readableBytes <= limits.earlyDataAllowance else { return .abusive }
            // Nothing to keep (and no allowance used): empty data must not grow the list without bound.
            guard data.readableBytes > 0 else { return .keptUntilOpen }
            // Out of `phase` while appending, so the array has one owner and is not copied.
            phase = .awaitingOpenResult
            early.append(data)
            phase = .opening(early: early, earlyBytes: earlyBytes + data.readableBytes)
            return .keptUntilOpen
        case .awaitingOpenResult, .cancelled:
            return .drop
        case .open:
            guard receiving else { return .drop }
            if suspendSent {
                bytesSinceSuspend += data.readableBytes
                if bytesSinceSuspend > limits.suspendAllowance { return .abusive }
            }
            return .deliver
        }
    }

    // MARK: Flow control

    /// The local socket stopped or started taking writes: whether to send
    /// `suspend` (true) or `resume` (false) to the peer, or nothing.
    mutating func localWritabilityChanged(_ isWritable: Bool) -> TunnelCommand? {
        guard isOpen, receiving else { return nil }
        if !isWritable, !suspendSent {
            suspendSent = true
            bytesSinceSuspend = 0
            return .suspend
        }
        if isWritable, suspendSent {
            suspendSent = false
            bytesSinceSuspend = 0
            return .resume
        }
        return nil
    }

    /// Updates the queue watermark state after the queue grew or shrank.
    mutating func updateQueueWatermarks(limits: TunnelMultiplexer.Limits) {
        if queue.bufferedBytes >= limits.flowQueueHighWatermark {
            queueFull = true
        } else if queue.bufferedBytes <= limits.flowQueueLowWatermark {
            queueFull = false
        }
    }

    // MARK: Closing

    enum PeerCloseEffect: Equatable {
        case nothing
        /// The peer-to-local stream ended: FIN the local socket after pending writes.
        case shutdownLocalOutput
        /// The peer cannot take our stream: stop reading, drop what is queued.
        case stopSending
        /// Both streams ended by the peer: close the local socket, forget the flow.
        case closeAll
    }

    /// Applies a `close` from the peer. While opening, the effects wait for the
    /// open to complete (the early data is still written first); a flow whose
    /// both streams end before then is cancelled.
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> PeerCloseEffect {
        defer {
            if case .opening = phase, isFinished { phase = .cancelled }
        }
        switch direction {
        case .none:
            return .nothing
        case .write:
            guard receiving else { return .nothing }
            receiving = false
            return .shutdownLocalOutput
        case .read:
            guard sending else { return .nothing }
            sending = false
            queue.removeAllData()
            return .stopSending
        case .all:
            sending = false
            receiving = false
            queue.removeAllData()
            return .closeAll
        }
    }

    /// The local socket's input ended: whether to queue `close(write)`.
    mutating func localReadEnded() -> Bool {
        guard sending else { return false }
        sending = false
        queue.appendClose(.write)
        return true
    }

    /// The local socket is gone: whatever still ran ends now. Returns the close
    /// to queue after the data already read, if the peer must hear of it.
    mutating func localClosed() -> TunnelConnectionCloseDirection? {
        switch (sending, receiving) {
        case (false, false):
            return nil
        case (true, true):
            sending = false
            receiving = false
            queue.appendClose(.all)
            return .all
        case (true, false):
            sending = false
            queue.appendClose(.write)
            return .write
        case (false, true):
            receiving = false
            queue.appendClose(.read)
            return .read
        }
    }
}
