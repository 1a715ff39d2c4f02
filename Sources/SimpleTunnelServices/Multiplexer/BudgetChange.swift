/// What a mutation did to one yes/no output: the multiplexer acts only on
/// `.changed`, so an output that did not flip costs nothing downstream.
enum OutputChange: Equatable, Sendable {
    case noChange
    case changed(newValue: Bool)

    /// The change from `before` to `after`.
    init(from before: Bool, to after: Bool) {
        self = before == after ? .noChange : .changed(newValue: after)
    }
}

/// What one mutation of `TunnelBudgets` changed in the two outputs the
/// multiplexer carries out, and the limits it just reached (which the
/// multiplexer reports and, for the server's budget, waits out). The
/// multiplexer applies it in one place (`TunnelMultiplexer.apply`).
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

    static let noChange = BudgetChange()
}
