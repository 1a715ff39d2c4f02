import NIOCore

/// One IP flow's whole state, free of I/O. An IP flow carries packets both
/// ways and has no streams that end one at a time: any `close` (but type 1)
/// ends it, as Apple's peers end every flow at its first close. It holds no
/// early data, and its queue of packets from the device cannot pause the
/// device (one serves every client): as a congested router would, it drops
/// packets that waited too long (`CoDel`) and, past a hard limit of bytes,
/// every new one; TCP inside the tunnel slows down.
///
/// Like `FlowState`, every event answers with the one `IPFlowAction` the
/// multiplexer must perform; a call only our own mistake could make asserts.
struct IPFlowState {
    enum Phase {
        /// Server: leasing an address.
        case opening
        /// Client: `open` sent, waiting for the server's answer.
        case awaitingOpenResult
        case open
        /// Server: the peer closed the flow while the lease was being decided.
        case cancelled
    }

    private(set) var phase: Phase
    /// The peer asked us to stop sending (`suspend`).
    private(set) var peerSuspended = false
    private(set) var queue = PacketQueue()
    /// Queued packet bytes past which the device's packets are dropped on arrival.
    private let queueLimit: Int
    /// Drops by waiting time, at the head.
    private var delayPolicy = CoDel()

    private init(phase: Phase, queueLimit: Int) {
        self.phase = phase
        self.queueLimit = queueLimit
    }

    /// Server: the peer asked for the flow; the IP layer is leasing.
    static func opening(queueLimit: Int) -> IPFlowState {
        IPFlowState(phase: .opening, queueLimit: queueLimit)
    }

    /// Client: we sent `open` for the device.
    static func awaitingOpenResult(queueLimit: Int) -> IPFlowState {
        IPFlowState(phase: .awaitingOpenResult, queueLimit: queueLimit)
    }

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// Whether the scheduler should give this flow a turn.
    var hasSomethingToSend: Bool { isOpen && !peerSuspended && !queue.isEmpty }

    // MARK: Opening

    /// Server: the address is leased.
    mutating func openSucceeded(configuration: [String: PropertyListValue]?) -> IPFlowAction {
        switch phase {
        case .opening:
            phase = .open
            return .confirmOpen(configuration: configuration)
        case .cancelled:
            // The peer gave the flow up: the lease goes back at once.
            return .forget
        case .awaitingOpenResult, .open:
            return .impossible(.openSucceededWhenNotOpening)
        }
    }

    /// Server: no address could be leased.
    mutating func openFailed(_ failure: FlowOpenFailure) -> IPFlowAction {
        switch phase {
        case .opening:
            return .endFailedOpen(answer: failure)
        case .cancelled:
            // The peer closed the flow and waits for no answer.
            return .endFailedOpen(answer: nil)
        case .awaitingOpenResult, .open:
            return .impossible(.openFailedWhenNotOpening)
        }
    }

    /// Server: a new `open` for this flow's identifier. An IP flow never
    /// half-closes, so while it exists the identifier is not the peer's to reuse.
    func peerReopened() -> IPFlowAction {
        .refuseDuplicateOpen
    }

    /// Client: the server answered our `open`.
    mutating func openResultReceived(
        _ result: TunnelConnectionOpenResult, configuration: [String: PropertyListValue]?, detail: TunnelOpenResultDetail?
    ) -> IPFlowAction {
        switch phase {
        case .awaitingOpenResult:
            guard result == .success else {
                return .failPendingOpen(FlowOpenFailure(result, "the server answered \(result)\(detail.map { ", \($0)" } ?? "")", detail: detail))
            }
            phase = .open
            return .completeOpen(configuration)
        case .open:
            // A second answer: harmless, ignored.
            return .none
        case .opening, .cancelled:
            return .impossible(.openResultForServerFlow)
        }
    }

    // MARK: Packets

    /// Packets from the peer, for the device: only once the flow is open.
    func receivePackets(_ packets: [TunnelPacket]) -> IPFlowAction {
        isOpen ? .writeLocal(packets) : .dropFromPeer
    }

    /// Packets read from the device at `now`, for the peer; dropped once the queue holds its limit.
    mutating func readPackets(_ packets: [TunnelPacket], now: NIODeadline) -> IPFlowAction {
        guard isOpen, queue.bufferedBytes < queueLimit else { return .dropRead(count: packets.count) }
        queue.append(packets, arrived: now)
        return .none
    }

    /// The tunnel has room at `now`: the next packets for it, about
    /// `maximumChunk` bytes; or, when the head has waited too long, its drop.
    mutating func nextToSend(maximumChunk: Int, now: NIODeadline) -> IPFlowAction {
        guard isOpen, !peerSuspended, let arrived = queue.headArrival else { return .none }
        if delayPolicy.shouldDrop(sojourn: now - arrived, queuedBytes: queue.bufferedBytes, now: now) {
            return .dropWaiting(queue.dropFirstBatch())
        }
        let queued = queue.bufferedBytes
        let packets = queue.popMessage(maximumCount: TunnelWireLimits.maximumPacketsPerMessage, maximumBytes: maximumChunk)
        return .send(packets, bytes: queued - queue.bufferedBytes)
    }

    /// The peer sent `suspend` (true) or `resume` (false).
    mutating func peerSuspended(_ suspended: Bool) -> IPFlowAction {
        peerSuspended = suspended
        return .none
    }

    // MARK: Closing

    /// A `close` from the peer: any type but none ends the flow.
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> IPFlowAction {
        guard direction != .none else { return .none }
        queue = PacketQueue()
        switch phase {
        case .open:
            return .forget
        case .opening:
            // The lease being decided is given back when it is.
            phase = .cancelled
            return .none
        case .cancelled:
            return .none
        case .awaitingOpenResult:
            return .failPendingOpen(FlowOpenFailure(.internalError, "the server closed the flow before answering"))
        }
    }
}
