import NIOCore

/// One TCP or UDP flow's whole state, free of I/O (an IP flow has its own,
/// `IPFlowState`): where it is in its life
/// and, carried by that phase, which of its two streams still run (PROTOCOL.md
/// A4 "Half-close"); what waits to go to the peer, and its flow control.
///
/// Every event is a method that answers with the one `FlowAction` the
/// multiplexer must perform; the multiplexer never sets a field. A call that
/// only our own mistake could make (opening a client's flow, an open result
/// for a server's) answers `.impossible`. What follows from the state alone (whether
/// to read the local socket, whether there is something to send, whether the
/// flow is over) is derived, never stored, so it cannot go stale.
struct FlowState {
    typealias Kind = TunnelFlowKind

    /// Which of a flow's two streams still run (PROTOCOL.md A4 "Half-close");
    /// each ends on its own.
    struct Streams: OptionSet, Hashable {
        let rawValue: UInt8
        /// Local to peer: we read the local socket and send `data`.
        static let sending = Streams(rawValue: 1)
        /// Peer to local: the peer sends `data`, we write the local socket.
        static let receiving = Streams(rawValue: 2)
        static let both: Streams = [.sending, .receiving]
    }

    enum Phase {
        /// Server: connecting. Data from the peer waits here (PROTOCOL.md A6);
        /// a stream the peer ends meanwhile ends on the socket once it opens.
        case opening(early: [ByteBuffer], earlyBytes: Int, running: Streams)
        /// Client: `open` sent, waiting for the server's answer.
        case awaitingOpenResult(running: Streams)
        case open(running: Streams)
        /// Server: the peer closed both streams while the flow was still connecting.
        case cancelled
        /// Only inside an event that edits the phase's payload in place (so
        /// the payload's array has one owner and is not copied); no event
        /// ever starts or ends in it. Seeing it is our own mistake.
        case modifying
    }

    struct Limits {
        var earlyDataAllowance: Int
        /// The flow's queue stops reading its socket at the high mark, restarts at the low one.
        var queue: Watermark
    }

    let kind: Kind
    private(set) var phase: Phase
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
        assert(kind != .ip, "an IP flow has its own machine, IPFlowState")
        self.kind = kind
        self.phase = phase
        self.limits = limits
        self.lastActivity = now
    }

    /// Server: the peer asked for this flow; the opener is connecting.
    static func opening(_ kind: Kind, limits: Limits, now: NIODeadline) -> FlowState {
        FlowState(kind: kind, phase: .opening(early: [], earlyBytes: 0, running: .both), limits: limits, now: now)
    }

    /// Client: we sent `open` for a local socket.
    static func awaitingOpenResult(_ kind: Kind, limits: Limits, now: NIODeadline) -> FlowState {
        FlowState(kind: kind, phase: .awaitingOpenResult(running: .both), limits: limits, now: now)
    }

    // MARK: Derived

    /// The streams that still run, in any phase.
    var running: Streams {
        switch phase {
        case .opening(_, _, let running), .awaitingOpenResult(let running), .open(let running): running
        case .cancelled, .modifying: []
        }
    }

    var sending: Bool { running.contains(.sending) }
    var receiving: Bool { running.contains(.receiving) }

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    var isAwaitingOpenResult: Bool {
        if case .awaitingOpenResult = phase { return true }
        return false
    }

    /// Both streams have ended and everything queued has gone: forget the flow.
    var isDone: Bool {
        if case .open(let running) = phase { return running.isEmpty && queue.isEmpty }
        return false
    }

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

    /// What the multiplexer brings the world in line with after each event.
    struct Needs {
        var isDone: Bool
        var hasSomethingToSend: Bool
        var wantsReading: Bool
    }

    var needs: Needs {
        Needs(isDone: isDone, hasSomethingToSend: hasSomethingToSend, wantsReading: wantsReading)
    }

    // MARK: Opening

    /// Server: the destination is connected (or the UDP socket bound, the lease made).
    mutating func openSucceeded(configuration: [String: PropertyListValue]?) -> FlowAction {
        switch phase {
        case .opening(let early, _, let running):
            phase = .open(running: running)
            return .confirmOpen(early: early, configuration: configuration, shutdownLocalOutput: !running.contains(.receiving))
        case .cancelled:
            // The peer gave the flow up: the new socket is closed unused.
            return .forget(aborting: true)
        case .awaitingOpenResult, .open:
            // Only a server's flow that is connecting opens: anything else is our own mistake.
            return .impossible(.openSucceededWhenNotOpening)
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
    }

    /// Server: the destination could not be reached (or the request was refused).
    mutating func openFailed(_ failure: FlowOpenFailure) -> FlowAction {
        switch phase {
        case .opening:
            return .endFailedOpen(answer: failure)
        case .cancelled:
            // The peer closed the flow and waits for no answer.
            return .endFailedOpen(answer: nil)
        case .awaitingOpenResult, .open:
            return .impossible(.openFailedWhenNotOpening)
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
    }

    /// Server: the peer sent a new `open` for this flow's identifier. Apple's
    /// app proxy names flows by `flow.hash`, which comes back once its flow
    /// object is gone, and its `Connection` forgets a flow at the first close
    /// of either direction, ours or its own. So once either stream has ended,
    /// the identifier is the peer's to reuse (the old flow is forgotten, its
    /// socket gets what it was sent), as Apple's server (which never checks) lets it.
    func peerReopened() -> FlowAction {
        if case .open(let running) = phase, running != .both { return .forgetForNewOpen }
        return .refuseDuplicateOpen
    }

    /// Client: the server answered our `open`.
    mutating func openResultReceived(
        _ result: TunnelConnectionOpenResult, configuration: [String: PropertyListValue]?, detail: TunnelOpenResultDetail?
    ) -> FlowAction {
        switch phase {
        case .awaitingOpenResult(let running):
            guard result == .success else {
                return .failPendingOpen(FlowOpenFailure(result, "the server answered \(result)\(detail.map { ", \($0)" } ?? "")", detail: detail))
            }
            phase = .open(running: running)
            // A `close(write)` that came before the answer ends the socket's output only now: a
            // SOCKS client must get its reply before the FIN.
            return .completeOpen(configuration, shutdownLocalOutput: !running.contains(.receiving))
        case .open:
            // A second answer: harmless, ignored.
            return .none
        case .opening, .cancelled:
            return .impossible(.openResultForServerFlow)
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
    }

    // MARK: Data from the peer

    mutating func receiveData(_ data: ByteBuffer, to destination: TunnelEndpoint?, now: NIODeadline) -> FlowAction {
        lastActivity = now
        switch phase {
        case .opening(var early, let earlyBytes, let running):
            guard running.contains(.receiving) else { return .drop }
            guard earlyBytes + data.readableBytes <= limits.earlyDataAllowance else {
                return .peerFault(reason: "the peer sent more than \(limits.earlyDataAllowance) bytes before the flow opened")
            }
            // Nothing to keep (and no allowance used): empty data must not grow the list without bound.
            guard data.readableBytes > 0 else { return .none }
            // Out of `phase` while appending, so the array has one owner and is not copied.
            phase = .modifying
            early.append(data)
            phase = .opening(early: early, earlyBytes: earlyBytes + data.readableBytes, running: running)
            return .none
        case .awaitingOpenResult, .cancelled:
            return .drop
        case .open(let running):
            return running.contains(.receiving) ? .writeLocal(data, to: destination) : .drop
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
    }

    /// Bytes of early data held for a flow still connecting.
    var earlyDataBytes: Int {
        if case .opening(_, let bytes, _) = phase { return bytes }
        return 0
    }

    // MARK: Data from the local socket

    /// Bytes read from the local socket, for the peer; dropped once the flow no longer sends.
    mutating func readLocal(_ data: ByteBuffer, from source: TunnelEndpoint?, now: NIODeadline) -> FlowAction {
        guard sending, isOpen || isAwaitingOpenResult else { return .dropLocalRead(bytes: data.readableBytes) }
        lastActivity = now
        queue.appendData(data, source: source)
        updateQueueWatermarks()
        return .none
    }

    /// The tunnel has room: the next item for it, at most `maximumChunk` bytes of data.
    mutating func nextToSend(maximumChunk: Int) -> FlowAction {
        guard !peerSuspended else { return .none }
        let budget = min(maximumChunk, sendableBytes)
        guard budget > 0, let item = queue.popFirst(maximumChunk: budget, splittable: kind == .tcp) else { return .none }
        if isAwaitingOpenResult, case .data(let data, _) = item {
            sentBeforeOpen += data.readableBytes
        }
        updateQueueWatermarks()
        return .send(item)
    }

    private mutating func updateQueueWatermarks() {
        queueFull = limits.queue.isPaused(at: queue.bufferedBytes, wasPaused: queueFull)
    }

    // MARK: Flow control

    /// The peer sent `suspend` (true) or `resume` (false). Reading and the
    /// flow's turn follow from the state.
    mutating func peerSuspended(_ suspended: Bool) -> FlowAction {
        peerSuspended = suspended
        return .none
    }

    /// The local socket stopped or started taking writes: whether to send
    /// `suspend` or `resume` to the peer.
    mutating func localWritabilityChanged(_ isWritable: Bool) -> FlowAction {
        guard isOpen, receiving else { return .none }
        if !isWritable, !suspendSent {
            suspendSent = true
            return .suspendPeer
        }
        if isWritable, suspendSent {
            suspendSent = false
            return .resumePeer
        }
        return .none
    }

    // MARK: Closing

    /// Ends `ended` of the running streams, in whichever phase carries them.
    private mutating func end(_ ended: Streams) {
        switch phase {
        case .opening(let early, let bytes, let running):
            phase = .opening(early: early, earlyBytes: bytes, running: running.subtracting(ended))
        case .awaitingOpenResult(let running):
            phase = .awaitingOpenResult(running: running.subtracting(ended))
        case .open(let running):
            phase = .open(running: running.subtracting(ended))
        case .cancelled, .modifying:
            // Nothing runs: nothing to end (the event that follows answers for `.modifying`).
            break
        }
    }

    /// Applies a `close` from the peer. While opening, the effects wait for the
    /// open to complete (the early data is still written first); a flow whose
    /// both streams end before then is cancelled.
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> FlowAction {
        let action: FlowAction
        switch direction {
        case .none:
            return .none
        case .write:
            guard receiving else { return .none }
            end(.receiving)
            action = .shutdownLocalOutput
        case .read:
            guard sending else { return .none }
            end(.sending)
            queue.removeAllData()
            updateQueueWatermarks()
            // Reading stops, as the state now says.
            action = .none
        case .all:
            end(.both)
            queue.removeAllData()
            updateQueueWatermarks()
            action = .forget(aborting: false)
        }
        switch phase {
        case .open:
            return action
        case .opening(_, _, let running):
            // Deferred until the open completes: `openSucceeded` carries it out,
            // unless the peer has given the flow up.
            if running.isEmpty { phase = .cancelled }
            return .none
        case .cancelled:
            return .none
        case .awaitingOpenResult(let running):
            return running.isEmpty ? .failPendingOpen(FlowOpenFailure(.internalError, "the server closed the flow before answering")) : .none
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
    }

    /// The local socket's input ended: a `close(write)` is queued after what was read.
    mutating func localReadEnded() -> FlowAction {
        guard sending else { return .none }
        end(.sending)
        queue.appendClose(.write)
        return .none
    }

    /// The local socket is gone: whatever still ran ends now, and the peer is told after what is queued.
    mutating func localClosed() -> FlowAction {
        let running: Streams
        switch phase {
        case .awaitingOpenResult:
            end(.both)
            return .failPendingOpen(FlowOpenFailure(.internalError, "the local connection closed"))
        case .opening, .cancelled:
            // The opener's socket, gone before the open completed: the open's result decides.
            return .none
        case .open(let open):
            running = open
        case .modifying:
            return .impossible(.phaseBeingModified)
        }
        let direction: TunnelConnectionCloseDirection
        switch (running.contains(.sending), running.contains(.receiving)) {
        case (false, false): return .none
        case (true, true): direction = .all
        case (true, false): direction = .write
        case (false, true): direction = .read
        }
        end(.both)
        queue.appendClose(direction)
        return .none
    }
}
