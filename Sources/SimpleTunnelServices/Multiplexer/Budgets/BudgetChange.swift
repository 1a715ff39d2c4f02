/// What a mutation did to one yes/no output: the multiplexer acts only on
/// `.changed`, so an output that did not flip costs nothing downstream.
enum OutputChange: Equatable, Sendable {
    case noChange
    case changed(newValue: Bool)

    /// The change from `before` to `after`.
    init(from before: Bool, to after: Bool) {
        self = before == after ? .noChange : .changed(newValue: after)
    }

    /// This change followed by `next`: a flip and its undoing are no change.
    func then(_ next: OutputChange) -> OutputChange {
        switch (self, next) {
        case (_, .noChange): self
        case (.noChange, _): next
        case (.changed, .changed): .noChange
        }
    }
}

/// What one mutation of `TunnelBudgets` changed in the two outputs the
/// multiplexer carries out, the limits it just reached (which the
/// multiplexer reports and, for the server's budget, waits out) and what to
/// charge the server's budget. The multiplexer applies it in one place
/// (`TunnelMultiplexer.apply`).
struct BudgetChange: Equatable, Sendable {
    /// Whether the tunnel reads from its peer (only a server ever holds it).
    var readPeer: OutputChange = .noChange
    /// Whether flows may read their sockets.
    var readFlows: OutputChange = .noChange
    /// The flows' queues just reached the tunnel's budget.
    var reachedTunnelBudget = false
    /// This tunnel's charge just took the server past its budget: the tunnel
    /// waits to be told it has fallen to its low mark (`TunnelBudgets.serverResumed`).
    var reachedServerBudget = false
    /// Bytes to add to (negative: give back to) the server's budget; if that
    /// leaves it over, the multiplexer says so (`TunnelBudgets.serverOverBudget`).
    var serverCharge = 0

    static let noChange = BudgetChange()

    /// This change followed by `next`, as one.
    func then(_ next: BudgetChange) -> BudgetChange {
        BudgetChange(
            readPeer: readPeer.then(next.readPeer), readFlows: readFlows.then(next.readFlows),
            reachedTunnelBudget: reachedTunnelBudget || next.reachedTunnelBudget,
            reachedServerBudget: reachedServerBudget || next.reachedServerBudget, serverCharge: serverCharge + next.serverCharge)
    }
}
