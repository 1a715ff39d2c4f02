import NIOCore

/// What one tunnel holds against its budgets, and what each budget allows
/// now: its flows' queued bytes (past the mark no flow reads its socket),
/// early data for flows still connecting and data past `suspend` (past them
/// a server does not read its peer), and its share of the server's budget.
struct TunnelBudgets {
    /// Bytes in flows' queues (`Limits.tunnelBufferBudget`).
    var queued: WatermarkedLevel
    /// Early data held for flows still connecting (`Limits.tunnelEarlyDataBudget`).
    var earlyData: WatermarkedLevel
    var suspendAllowance: SuspendAllowance
    /// The server's budget over all tunnels; nil on a client.
    let server: ServerBufferBudget?
    /// What this tunnel has charged to the server's budget, and of that what is data past `suspend`.
    var chargedToServer = 0
    var suspendBytesCharged = 0
    /// False while the server is over its budget: no flow reads, the peer is not read.
    var withinServer = true
    /// Whether the peer is read now (a server's; the channel handler holds its reads).
    var wantsPeerReads = true

    init(limits: TunnelMultiplexer.Limits, server: ServerBufferBudget?, overrun: SuspendAllowance.Overrun) {
        self.queued = WatermarkedLevel(Watermark(high: limits.tunnelBufferBudget))
        self.earlyData = WatermarkedLevel(Watermark(high: limits.tunnelEarlyDataBudget))
        self.suspendAllowance = SuspendAllowance(perFlow: limits.suspendAllowance, perTunnel: limits.tunnelSuspendAllowance, overrun: overrun)
        self.server = server
    }

    /// Whether flows may read their sockets at all.
    var mayReadLocally: Bool { !queued.isPaused && withinServer }
}

/// What a client's multiplexer waits for from the server: the answers to the
/// flows it opened and to its requests, in the order they were sent.
struct ClientRequests {
    typealias OpenCompletion = (Result<[String: PropertyListValue]?, FlowOpenFailure>) -> Void
    var nextIdentifier: TunnelConnectionIdentifier = 1
    var opens: [TunnelConnectionIdentifier: OpenCompletion] = [:]
    var configurations = CircularBuffer<(Result<[String: PropertyListValue], TunnelClosedError>) -> Void>()
    var authentications = CircularBuffer<(Result<TunnelLoginAnswer, TunnelClosedError>) -> Void>()

    /// The tunnel is gone: every waiter hears so, once.
    mutating func failAll() {
        let opens = self.opens
        self.opens.removeAll()
        for completion in opens.values {
            completion(.failure(FlowOpenFailure(.internalError, "the tunnel closed")))
        }
        while let request = configurations.popFirst() {
            request(.failure(TunnelClosedError()))
        }
        while let request = authentications.popFirst() {
            request(.failure(TunnelClosedError()))
        }
    }
}

/// This tunnel's counters, and the server's metrics it feeds (nil on a client).
struct TunnelCounters {
    var statistics = TunnelStatistics()
    let metrics: (any TunnelMultiplexerMetrics)?
}

/// Work left for the end of the event-loop tick: endpoints to flush and a drain of the schedule.
struct PendingWork {
    var endpointsToFlush: [TunnelConnectionIdentifier] = []
    var drainScheduled = false
}

/// The tunnel's UDP flows: how many, and the timer that expires idle ones while there are any.
struct UDPFlowCount {
    var count = 0
    var expiry: Scheduled<Void>?
}
