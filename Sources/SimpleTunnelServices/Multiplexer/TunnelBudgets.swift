import NIOCore

/// What one tunnel holds against its budgets, and the two things they decide:
/// whether flows read their sockets (`mayReadLocally`: not past the flows'
/// queued bytes, nor while the server is over its budget) and whether a
/// server reads its peer (`wantsPeerReads`: not past the early data for flows
/// still connecting, data past `suspend`, unanswered control messages, the
/// server's budget, nor during a traffic hold).
///
/// Every mutation returns what it changed in those two outputs
/// (`BudgetChange`); the multiplexer applies that in one place and writes
/// none of the fields itself.
struct TunnelBudgets {
    /// Bytes in flows' queues (`Limits.tunnelBufferBudget`).
    private(set) var queued: WatermarkedLevel
    /// Early data held for flows still connecting (`Limits.tunnelEarlyDataBudget`).
    private(set) var earlyData: WatermarkedLevel
    private(set) var suspendAllowance: SuspendAllowance
    /// The server's budget over all tunnels; nil on a client.
    let server: ServerBufferBudget?
    /// What this tunnel has charged to the server's budget, and of that what is data past `suspend`.
    private(set) var chargedToServer = 0
    private(set) var suspendBytesCharged = 0
    /// False while the server is over its budget: no flow reads, the peer is not read.
    private(set) var withinServer = true
    /// Replies and other control messages waiting reached `Limits.controlBacklogLimit`.
    private(set) var controlBacklogFull = false
    /// The traffic meter asked to wait before reading the peer again.
    private(set) var trafficHoldsReading = false
    /// Unanswered control messages at which the peer is held.
    let controlBacklogLimit: Int
    /// Only a server ever holds its peer (a client's overrun aborts the flow instead).
    let holdsPeer: Bool

    init(limits: TunnelMultiplexer.Limits, server: ServerBufferBudget?, overrun: SuspendAllowance.Overrun) {
        self.queued = WatermarkedLevel(Watermark(high: limits.tunnelBufferBudget))
        self.earlyData = WatermarkedLevel(Watermark(high: limits.tunnelEarlyDataBudget))
        self.suspendAllowance = SuspendAllowance(perFlow: limits.suspendAllowance, perTunnel: limits.tunnelSuspendAllowance, overrun: overrun)
        self.server = server
        self.controlBacklogLimit = limits.controlBacklogLimit
        self.holdsPeer = overrun == .holdPeer
    }

    /// Whether flows may read their sockets at all.
    var mayReadLocally: Bool { !queued.isPaused && withinServer }

    /// Whether the peer is read now (the channel handler holds its reads otherwise).
    var wantsPeerReads: Bool {
        !holdsPeer
            || (!earlyData.isPaused && withinServer && !controlBacklogFull && suspendAllowance.mayReadPeer && !trafficHoldsReading)
    }

    // MARK: Mutations, each answering what it changed

    /// Flows' queues and early data grew (or, negative, shrank) by these bytes.
    @inline(__always)
    mutating func account(queued queuedBytes: Int, early earlyBytes: Int) -> BudgetChange {
        // After most events of a flow nothing it holds changed.
        guard queuedBytes != 0 || earlyBytes != 0 else { return .noChange }
        return observing { budgets, change in
            budgets.chargeServer(queuedBytes + earlyBytes, &change)
            if queuedBytes != 0, budgets.queued.add(queuedBytes) == .paused {
                change.reachedTunnelBudget = true
            }
            if earlyBytes != 0 {
                _ = budgets.earlyData.add(earlyBytes)
            }
        }
    }

    /// We asked the peer to `suspend` the flow.
    mutating func suspendSent(_ identifier: TunnelConnectionIdentifier) -> BudgetChange {
        observing { budgets, _ in
            // Folded into the before/after comparison here, as every allowance change below.
            _ = budgets.suspendAllowance.suspendSent(identifier)
        }
    }

    /// Data delivered to a flow's socket: charged if the flow is suspended.
    mutating func chargeDelivered(_ identifier: TunnelConnectionIdentifier, bytes: Int) -> (verdict: SuspendAllowance.Verdict, change: BudgetChange) {
        var verdict = SuspendAllowance.Verdict.within
        let change = observing { budgets, change in
            verdict = budgets.suspendAllowance.charge(identifier, bytes: bytes).verdict
            budgets.chargeSuspendAllowance(&change)
        }
        return (verdict, change)
    }

    /// The flow's socket drained below its low mark, or closed.
    mutating func suspendDrained(_ identifier: TunnelConnectionIdentifier) -> BudgetChange {
        observing { budgets, change in
            _ = budgets.suspendAllowance.drained(identifier)
            budgets.chargeSuspendAllowance(&change)
        }
    }

    /// The flow is forgotten; `closingSocket`, when its socket is still open.
    mutating func flowForgotten(_ identifier: TunnelConnectionIdentifier, closingSocket: ObjectIdentifier?) -> BudgetChange {
        observing { budgets, change in
            _ = budgets.suspendAllowance.flowForgotten(identifier, closingSocket: closingSocket)
            budgets.chargeSuspendAllowance(&change)
        }
    }

    /// A forgotten flow's socket finished closing.
    mutating func socketClosed(_ socket: ObjectIdentifier) -> BudgetChange {
        observing { budgets, change in
            _ = budgets.suspendAllowance.socketClosed(socket)
            budgets.chargeSuspendAllowance(&change)
        }
    }

    /// The server's budget fell to its low mark after this tunnel waited for it.
    mutating func serverResumed() -> BudgetChange {
        observing { budgets, _ in budgets.withinServer = true }
    }

    /// This many control messages wait to be written.
    mutating func controlBacklog(_ count: Int) -> BudgetChange {
        let full = count >= controlBacklogLimit
        // Called at every drain: skip the comparison when nothing moved.
        guard full != controlBacklogFull else { return .noChange }
        return observing { budgets, _ in budgets.controlBacklogFull = full }
    }

    /// The traffic meter's hold on reading the peer began or ended.
    mutating func trafficHold(reading held: Bool) -> BudgetChange {
        observing { budgets, _ in budgets.trafficHoldsReading = held }
    }

    /// The tunnel is gone: what it charged to the server goes back.
    mutating func tunnelClosed() -> BudgetChange {
        observing { budgets, _ in
            guard let server = budgets.server else { return }
            _ = server.charge(-budgets.chargedToServer)
            budgets.chargedToServer = 0
        }
    }

    // MARK: Internals

    /// Runs `mutation`, then records in its change how the two outputs moved.
    @inline(__always)
    private mutating func observing(_ mutation: (inout TunnelBudgets, inout BudgetChange) -> Void) -> BudgetChange {
        let (readFlows, readPeer) = (mayReadLocally, wantsPeerReads)
        var change = BudgetChange.noChange
        mutation(&self, &change)
        change.readFlows = OutputChange(from: readFlows, to: mayReadLocally)
        change.readPeer = OutputChange(from: readPeer, to: wantsPeerReads)
        return change
    }

    /// Charges to the server what the suspend allowance holds beyond what it was charged.
    private mutating func chargeSuspendAllowance(_ change: inout BudgetChange) {
        let held = suspendAllowance.total
        chargeServer(held - suspendBytesCharged, &change)
        suspendBytesCharged = held
    }

    private mutating func chargeServer(_ bytes: Int, _ change: inout BudgetChange) {
        guard bytes != 0, let server else { return }
        chargedToServer += bytes
        let within = server.charge(bytes)
        // Only the budget says when to go on (at its low mark, `serverResumed`), so that every paused tunnel hears it.
        guard !within, withinServer else { return }
        withinServer = false
        change.reachedServerBudget = true
    }
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
