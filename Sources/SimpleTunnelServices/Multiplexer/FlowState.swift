import NIOCore

/// One logical connection's whole state, free of I/O: where it is in its life,
/// which of its two streams still run (PROTOCOL.md A4 "Half-close"), what waits
/// to go to the peer, and its flow control.
///
/// Every transition is a method that returns what the multiplexer must do; the
/// multiplexer never sets a field. What follows from the state alone (whether
/// to read the local socket, whether there is something to send, whether the
/// flow is over) is derived, never stored, so it cannot go stale.
struct FlowState {
    typealias Kind = TunnelFlowKind

    enum Phase {
        /// Server: connecting. Data from the peer waits here (PROTOCOL.md A6).
        case opening(early: [ByteBuffer], earlyBytes: Int)
        /// Client: `open` sent, waiting for the server's answer.
        case awaitingOpenResult
        case open
        /// Server: the peer closed both streams while the flow was still connecting.
        case cancelled
    }

    struct Limits {
        var earlyDataAllowance: Int
        /// The flow's queue stops reading its socket at the high mark, restarts at the low one.
        var queue: Watermark
    }

    let kind: Kind
    private(set) var phase: Phase
    /// Local-to-peer stream: we read the local socket and send `data`.
    private(set) var sending = true
    /// Peer-to-local stream: the peer sends `data`, we write the local socket.
    private(set) var receiving = true
    /// The peer asked us to stop sending (`suspend`).
    private(set) var peerSuspended = false
    /// We asked the peer to stop sending.
    private(set) var suspendSent = false
    /// Reading paused because the queue passed its high watermark.
    private(set) var queueFull = false
    private(set) var queue = FlowOutboundQueue()
    /// Client: data sent before the server answered the open. A server keeps
    /// up to 256 KiB of it (PROTOCOL.md A6), so a request need not wait a round trip.
    private(set) var sentBeforeOpen = 0
    /// Last data in either direction, for idle expiry of UDP flows.
    private(set) var lastActivity: NIODeadline

    private let limits: Limits

    private init(kind: Kind, phase: Phase, limits: Limits, now: NIODeadline) {
        self.kind = kind
        self.phase = phase
        self.limits = limits
        self.lastActivity = now
    }

    /// Server: the peer asked for this flow; the opener is connecting.
    static func opening(_ kind: Kind, limits: Limits, now: NIODeadline) -> FlowState {
        FlowState(kind: kind, phase: .opening(early: [], earlyBytes: 0), limits: limits, now: now)
    }

    /// Client: we sent `open` for a local socket.
    static func awaitingOpenResult(_ kind: Kind, limits: Limits, now: NIODeadline) -> FlowState {
        FlowState(kind: kind, phase: .awaitingOpenResult, limits: limits, now: now)
    }

    // MARK: Derived

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    var isAwaitingOpenResult: Bool {
        if case .awaitingOpenResult = phase { return true }
        return false
    }

    /// Both streams have ended and everything queued has gone: forget the flow.
    var isDone: Bool { isOpen && !sending && !receiving && queue.isEmpty }

    /// Bytes that may go to the peer now: any once open; before, for a TCP
    /// flow, what the early-data allowance leaves.
    var sendableBytes: Int {
        if isOpen { return Int.max }
        guard isAwaitingOpenResult, kind == .tcp else { return 0 }
        return max(0, limits.earlyDataAllowance - sentBeforeOpen)
    }

    /// Whether the scheduler should give this flow a turn.
    var hasSomethingToSend: Bool { !queue.isEmpty && !peerSuspended && sendableBytes > 0 }

    /// Whether the local socket should be read, as far as this flow is concerned
    /// (the tunnel adds its own memory budget on top).
    var wantsReading: Bool {
        guard sending, !peerSuspended, !queueFull else { return false }
        return isOpen || sendableBytes > queue.bufferedBytes
    }

    // MARK: Opening

    enum OpenOutcome {
        /// Server: the flow is open; write the early data, then, if the peer
        /// already ended its stream, FIN the local socket.
        case opened(early: [ByteBuffer], shutdownLocalOutput: Bool)
        /// The peer closed the flow before it opened: close the new socket, forget the flow.
        case cancelled
    }

    /// Server: the destination is connected (or the UDP socket bound, the lease made).
    mutating func openSucceeded() -> OpenOutcome {
        switch phase {
        case .opening(let early, _):
            phase = .open
            return .opened(early: early, shutdownLocalOutput: !receiving)
        case .cancelled:
            return .cancelled
        case .awaitingOpenResult, .open:
            // Only a server's flow that is connecting opens: anything else is our own mistake.
            assertionFailure("openSucceeded in phase \(phase)")
            return .cancelled
        }
    }

    enum ReopenVerdict: Equatable {
        /// Answer 1: the flow is live (or still connecting) and stays as it is.
        case refuse
        /// Forget this flow (its socket gets what it was sent, then closes) and open the new one.
        case replace
    }

    /// Server: the peer sent a new `open` for this flow's identifier. Apple's
    /// app proxy names flows by `flow.hash`, which comes back once its flow
    /// object is gone, and its `Connection` forgets a flow at the first close
    /// of either direction, ours or its own. So once either stream has ended,
    /// the identifier is the peer's to reuse, as Apple's server (which never
    /// checks) lets it.
    var reopenVerdict: ReopenVerdict {
        isOpen && (!sending || !receiving) ? .replace : .refuse
    }

    /// Server: the open failed; whether the peer still waits for an answer.
    func openFailedNeedsAnswer() -> Bool {
        if case .opening = phase { return true }
        return false
    }

    /// Client: the server answered `success`; false when no answer was awaited.
    mutating func openResultSucceeded() -> Bool {
        guard isAwaitingOpenResult else { return false }
        phase = .open
        return true
    }

    // MARK: Data from the peer

    enum InboundDataVerdict: Equatable {
        case deliver
        /// Kept in the state until the open completes.
        case keptUntilOpen
        /// After a close, or for a flow that cannot take it: harmless, dropped.
        case drop
        /// More than the early-data allowance before the open completed.
        case tooMuchEarlyData
    }

    mutating func receiveData(_ data: ByteBuffer, now: NIODeadline) -> InboundDataVerdict {
        lastActivity = now
        switch phase {
        case .opening(var early, let earlyBytes):
            guard receiving else { return .drop }
            guard earlyBytes + data.readableBytes <= limits.earlyDataAllowance else { return .tooMuchEarlyData }
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
            return receiving ? .deliver : .drop
        }
    }

    /// Bytes of early data held for a flow still connecting.
    var earlyDataBytes: Int {
        if case .opening(_, let bytes) = phase { return bytes }
        return 0
    }

    // MARK: Data from the local socket

    /// Bytes read from the local socket, for the peer; false when the flow no
    /// longer sends (they are dropped).
    mutating func readLocal(_ data: ByteBuffer, from source: TunnelEndpoint?, now: NIODeadline) -> Bool {
        guard sending, isOpen || isAwaitingOpenResult else { return false }
        lastActivity = now
        queue.appendData(data, source: source)
        updateQueueWatermarks()
        return true
    }

    /// Packets read from an IP flow's device. It cannot be paused per client:
    /// beyond the high watermark packets are dropped (false), as a congested
    /// router would, and TCP inside the tunnel slows down.
    mutating func readPackets(_ packets: [TunnelPacket], now: NIODeadline) -> Bool {
        guard isOpen, kind == .ip, queue.bufferedBytes < limits.queue.high else { return false }
        lastActivity = now
        queue.appendPackets(packets)
        return true
    }

    /// The next item for the tunnel, at most `maximumChunk` bytes of data.
    mutating func nextToSend(maximumChunk: Int) -> FlowOutboundQueue.Item? {
        guard !peerSuspended else { return nil }
        let budget = min(maximumChunk, sendableBytes)
        guard budget > 0, let item = queue.popFirst(maximumChunk: budget, splittable: kind == .tcp) else { return nil }
        if isAwaitingOpenResult, case .data(let data, _) = item {
            sentBeforeOpen += data.readableBytes
        }
        updateQueueWatermarks()
        return item
    }

    private mutating func updateQueueWatermarks() {
        queueFull = limits.queue.isPaused(at: queue.bufferedBytes, wasPaused: queueFull)
    }

    // MARK: Flow control

    /// The peer sent `suspend` (true) or `resume` (false).
    mutating func peerSuspended(_ suspended: Bool) {
        peerSuspended = suspended
    }

    /// The local socket stopped or started taking writes: whether to send
    /// `suspend` or `resume` to the peer, or nothing.
    mutating func localWritabilityChanged(_ isWritable: Bool) -> TunnelCommand? {
        guard isOpen, receiving else { return nil }
        if !isWritable, !suspendSent {
            suspendSent = true
            return .suspend
        }
        if isWritable, suspendSent {
            suspendSent = false
            return .resume
        }
        return nil
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
        /// Client: the server closed a flow it had not answered yet.
        case failPendingOpen
        /// Server: still connecting; what the close means applies when it opens.
        case deferredUntilOpen
    }

    /// Applies a `close` from the peer. While opening, the effects wait for the
    /// open to complete (the early data is still written first); a flow whose
    /// both streams end before then is cancelled.
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> PeerCloseEffect {
        let effect: PeerCloseEffect
        switch direction {
        case .none:
            effect = .nothing
        case .write:
            guard receiving else { return .nothing }
            receiving = false
            effect = .shutdownLocalOutput
        case .read:
            guard sending else { return .nothing }
            sending = false
            queue.removeAllData()
            updateQueueWatermarks()
            effect = .stopSending
        case .all:
            sending = false
            receiving = false
            queue.removeAllData()
            updateQueueWatermarks()
            effect = .closeAll
        }
        switch phase {
        case .open:
            return effect
        case .opening:
            if !sending, !receiving { phase = .cancelled }
            return .deferredUntilOpen
        case .awaitingOpenResult:
            return !sending && !receiving ? .failPendingOpen : .nothing
        case .cancelled:
            return .nothing
        }
    }

    /// The local socket's input ended: whether a `close(write)` was queued.
    mutating func localReadEnded() -> Bool {
        guard sending else { return false }
        sending = false
        queue.appendClose(.write)
        return true
    }

    enum LocalCloseEffect: Equatable {
        case nothing
        /// A close was queued after the data already read.
        case queuedClose(TunnelConnectionCloseDirection)
        /// Client: the local side gave up before the server answered.
        case failPendingOpen
    }

    /// The local socket is gone: whatever still ran ends now.
    mutating func localClosed() -> LocalCloseEffect {
        switch phase {
        case .awaitingOpenResult:
            sending = false
            receiving = false
            return .failPendingOpen
        case .opening, .cancelled:
            // A server has no socket before the open completes.
            return .nothing
        case .open:
            break
        }
        let direction: TunnelConnectionCloseDirection
        switch (sending, receiving) {
        case (false, false): return .nothing
        case (true, true): direction = .all
        case (true, false): direction = .write
        case (false, true): direction = .read
        }
        sending = false
        receiving = false
        queue.appendClose(direction)
        return .queuedClose(direction)
    }
}
