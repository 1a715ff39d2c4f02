/// Whether the database answers, as the operations' outcomes and a probe of
/// one connection tell it; decided here, carried out by `TunnelDatabase`.
///
/// PostgresNIO's pool retries a lost database at 100 ms × 1.25ⁿ, up to a
/// minute apart, and cannot be told otherwise: after a long outage logins would
/// wait that long for its next try. So once an operation finds the database
/// away, a connection of its own is tried every `probeInterval`; the first that
/// gets through means a fresh pool, which connects at once. While probes fail,
/// operations that would only wait out their deadline are answered at once.
struct DatabaseHealth: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Operations go to the pool.
        case answering
        /// An operation found the database away; the next probe tells.
        case suspect
        /// The last probe failed: operations are answered at once, until one gets through.
        case away
    }

    /// What `TunnelDatabase` does after a probe.
    enum ProbeVerdict: Sendable, Equatable {
        /// The database answers again: serve from a fresh pool (the old one may be waiting out its backoff).
        case replacePool
        /// Still away: probe again later.
        case stillAway
        /// An operation got through on the pool meanwhile: it works, keep it.
        case keepPool
    }

    let probeInterval: Duration
    private(set) var state: State = .answering
    private var lastProbe: ContinuousClock.Instant?
    /// When an operation first found the database away, for the line that says it is back.
    private(set) var awaySince: ContinuousClock.Instant?

    init(probeInterval: Duration = .seconds(1)) {
        self.probeInterval = probeInterval
    }

    /// Whether an operation should not wait for the pool: the last probe found no database.
    var answersAtOnce: Bool { state == .away }

    /// An operation failed for want of the database.
    mutating func operationFoundItAway(now: ContinuousClock.Instant) {
        guard state == .answering else { return }
        state = .suspect
        awaySince = awaySince ?? now
    }

    /// An operation got its answer: the pool works, nothing to probe.
    mutating func operationSucceeded() {
        guard state == .suspect else { return }
        state = .answering
        awaySince = nil
    }

    /// Whether to probe now: never while the database answers, else at most once per `probeInterval`.
    mutating func probeDue(now: ContinuousClock.Instant) -> Bool {
        guard state != .answering else { return false }
        if let lastProbe, now - lastProbe < probeInterval { return false }
        lastProbe = now
        return true
    }

    mutating func probeFinished(gotThrough: Bool) -> ProbeVerdict {
        guard state != .answering else { return .keepPool }
        guard gotThrough else {
            state = .away
            return .stillAway
        }
        state = .answering
        lastProbe = nil
        awaySince = nil
        return .replacePool
    }
}
