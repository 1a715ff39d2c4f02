import NIOCore

/// What one tunnel holds against its budgets, and the two things they decide:
/// whether flows read their sockets (`mayReadLocally`: not past the flows'
/// queued bytes, nor while the server is over its budget) and whether a
/// server reads its peer (`wantsPeerReads`: not past the early data for flows
/// still connecting, data past `suspend`, unanswered control messages, the
/// server's budget, nor during a traffic hold).
///
/// Every mutation returns what it changed in those two outputs, and what to
/// charge the server's shared budget (`BudgetChange`); the multiplexer
/// applies that in one place and writes none of the fields itself.
struct TunnelBudgets {
    /// Bytes in flows' queues (`Limits.tunnelBufferBudget`).
    private(set) var queued: WatermarkedLevel
    /// Early data held for flows still connecting (`Limits.tunnelEarlyDataBudget`).
    private(set) var earlyData: WatermarkedLevel
    private(set) var suspendAllowance: SuspendAllowance
    /// Whether a server's budget over all tunnels counts what this tunnel
    /// holds (never on a client). The multiplexer charges it
    /// (`BudgetChange.serverCharge`): it is shared, and waking its waiters
    /// runs other code, which has no place inside a mutation of this value.
    let chargesServer: Bool
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

    init(limits: TunnelMultiplexer.Limits, chargesServer: Bool, overrun: SuspendAllowance.Overrun) {
        self.queued = WatermarkedLevel(Watermark(high: limits.tunnelBufferBudget))
        self.earlyData = WatermarkedLevel(Watermark(high: limits.tunnelEarlyDataBudget))
        self.suspendAllowance = SuspendAllowance(perFlow: limits.suspendAllowance, perTunnel: limits.tunnelSuspendAllowance, overrun: overrun)
        self.chargesServer = chargesServer
        self.controlBacklogLimit = limits.controlBacklogLimit
        self.holdsPeer = overrun == .holdPeer
    }

    /// Whether flows may read their sockets at all: output "read the flows".
    private(set) var mayReadLocally = true
    /// Whether the peer is read now (the channel handler holds its reads
    /// otherwise): output "read the peer".
    private(set) var wantsPeerReads = true

    // MARK: Mutations, each answering what it changed

    /// Flows' queues and early data grew (or, negative, shrank) by these bytes.
    /// On every message: within the budgets it only adds.
    @inline(__always)
    mutating func account(queued queuedBytes: Int, early earlyBytes: Int) -> BudgetChange {
        var change = BudgetChange.noChange
        chargeServer(queuedBytes + earlyBytes, &change)
        var crossed = false
        if queuedBytes != 0, let crossing = queued.add(queuedBytes) {
            change.reachedTunnelBudget = crossing == .paused
            crossed = true
        }
        if earlyBytes != 0, earlyData.add(earlyBytes) != nil {
            crossed = true
        }
        if crossed {
            settle(&change)
        }
        return change
    }

    /// We asked the peer to `suspend` the flow: nothing is charged until data arrives.
    mutating func suspendSent(_ identifier: TunnelConnectionIdentifier) -> BudgetChange {
        suspendAllowanceChanged(suspendAllowance.suspendSent(identifier))
    }

    /// Data delivered to a flow's socket: charged if the flow is suspended.
    @inline(__always)
    mutating func chargeDelivered(_ identifier: TunnelConnectionIdentifier, bytes: Int) -> (verdict: SuspendAllowance.Verdict, change: BudgetChange) {
        let (verdict, readPeer) = suspendAllowance.charge(identifier, bytes: bytes)
        return (verdict, suspendAllowanceChanged(readPeer))
    }

    /// The flow's socket drained below its low mark, or closed.
    mutating func suspendDrained(_ identifier: TunnelConnectionIdentifier) -> BudgetChange {
        suspendAllowanceChanged(suspendAllowance.drained(identifier))
    }

    /// The flow is forgotten; `closingSocket`, when its socket is still open.
    mutating func flowForgotten(_ identifier: TunnelConnectionIdentifier, closingSocket: ObjectIdentifier?) -> BudgetChange {
        suspendAllowanceChanged(suspendAllowance.flowForgotten(identifier, closingSocket: closingSocket))
    }

    /// A forgotten flow's socket finished closing.
    mutating func socketClosed(_ socket: ObjectIdentifier) -> BudgetChange {
        suspendAllowanceChanged(suspendAllowance.socketClosed(socket))
    }

    /// What this tunnel was charged took the server past its budget. The
    /// first time, `reachedServerBudget` asks the multiplexer to wait for it.
    mutating func serverOverBudget() -> BudgetChange {
        guard withinServer else { return .noChange }
        withinServer = false
        var change = settled()
        change.reachedServerBudget = true
        return change
    }

    /// The server's budget fell to its low mark after this tunnel waited for it.
    mutating func serverResumed() -> BudgetChange {
        guard !withinServer else { return .noChange }
        withinServer = true
        return settled()
    }

    /// This many control messages wait to be written. On every drain: most often nothing moves.
    @inline(__always)
    mutating func controlBacklog(_ count: Int) -> BudgetChange {
        let full = count >= controlBacklogLimit
        guard full != controlBacklogFull else { return .noChange }
        controlBacklogFull = full
        return settled()
    }

    /// The traffic meter's hold on reading the peer began or ended.
    mutating func trafficHold(reading held: Bool) -> BudgetChange {
        guard held != trafficHoldsReading else { return .noChange }
        trafficHoldsReading = held
        return settled()
    }

    /// The tunnel is gone: what it charged to the server goes back.
    mutating func tunnelClosed() -> BudgetChange {
        var change = BudgetChange.noChange
        change.serverCharge = -chargedToServer
        chargedToServer = 0
        return change
    }

    // MARK: Internals

    /// What the suspend allowance holds moved: charge the difference to the
    /// server, and bring the outputs in line if the allowance flipped one.
    @inline(__always)
    private mutating func suspendAllowanceChanged(_ readPeer: OutputChange) -> BudgetChange {
        // Most flows are never suspended: nothing moved, nothing to compare.
        let held = suspendAllowance.total
        guard held != suspendBytesCharged || readPeer != .noChange else { return .noChange }
        var change = BudgetChange.noChange
        chargeServer(held - suspendBytesCharged, &change)
        suspendBytesCharged = held
        if readPeer != .noChange {
            settle(&change)
        }
        return change
    }

    /// Asks the multiplexer to charge the server's budget with these bytes.
    @inline(__always)
    private mutating func chargeServer(_ bytes: Int, _ change: inout BudgetChange) {
        guard bytes != 0, chargesServer else { return }
        chargedToServer += bytes
        change.serverCharge += bytes
    }

    private mutating func settled() -> BudgetChange {
        var change = BudgetChange.noChange
        settle(&change)
        return change
    }

    /// An input crossed a mark: the two outputs follow, and `change` says which flipped.
    @inline(never)
    private mutating func settle(_ change: inout BudgetChange) {
        let flows = !queued.isPaused && withinServer
        change.readFlows = OutputChange(from: mayReadLocally, to: flows)
        mayReadLocally = flows
        let peer = !holdsPeer
            || (!earlyData.isPaused && withinServer && !controlBacklogFull && suspendAllowance.mayReadPeer && !trafficHoldsReading)
        change.readPeer = OutputChange(from: wantsPeerReads, to: peer)
        wantsPeerReads = peer
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
