import NIOCore

/// What goes into the tunnel next, as a value: control messages first, then
/// flows in turns of `TunnelMultiplexer.turnBytes` each. A flow that had nothing to send and now
/// has (a keystroke, a request) goes ahead of flows that stay backlogged (a
/// download), as fq_codel serves its new flows before its old ones; after one
/// turn that leaves it with more to send, it joins the backlogged round.
struct TunnelSchedule {
    private var control = CircularBuffer<TunnelMessage>()
    /// Flows that became ready after being idle, served first.
    private var sparse = CircularBuffer<TunnelConnectionIdentifier>()
    /// Flows still holding data after a turn, served round-robin.
    private var backlogged = CircularBuffer<TunnelConnectionIdentifier>()
    /// Every flow in either ring, or taking its turn now.
    private var members = Set<TunnelConnectionIdentifier>()

    var isEmpty: Bool { control.isEmpty && members.isEmpty }

    /// Control messages waiting, for the tunnel's memory budget.
    var controlCount: Int { control.count }

    mutating func enqueueControl(_ message: TunnelMessage) {
        control.append(message)
    }

    mutating func popControl() -> TunnelMessage? {
        control.popFirst()
    }

    /// The flow has something to send: it gets a turn (once, however often
    /// this is called). Returns whether it was not already waiting for one.
    @discardableResult
    mutating func markReady(_ identifier: TunnelConnectionIdentifier) -> Bool {
        guard members.insert(identifier).inserted else { return false }
        sparse.append(identifier)
        return true
    }

    /// The flow whose turn it is; call `turnEnded` after its turn.
    mutating func nextFlow() -> TunnelConnectionIdentifier? {
        sparse.popFirst() ?? backlogged.popFirst()
    }

    /// After a turn: a flow with more to send waits for its next round.
    mutating func turnEnded(_ identifier: TunnelConnectionIdentifier, hasMore: Bool) {
        if hasMore {
            backlogged.append(identifier)
        } else {
            members.remove(identifier)
        }
    }

    /// The flow is gone.
    mutating func remove(_ identifier: TunnelConnectionIdentifier) {
        guard members.remove(identifier) != nil else { return }
        sparse.removeAll { $0 == identifier }
        backlogged.removeAll { $0 == identifier }
    }

    mutating func removeAll() {
        control.removeAll()
        sparse.removeAll()
        backlogged.removeAll()
        members.removeAll()
    }
}
