import NIOCore

/// Bounds on password checks (`PasswordCheckQueue`).
public struct PasswordCheckLimits: Sendable, Hashable {
    /// Checks hashing at once, in all.
    public var concurrent = 4
    /// Checks running or waiting from one source (an IPv6 /64).
    public var perSource = 2
    /// Checks waiting for a turn, in all.
    public var waiting = 256

    public init() {}
}

/// Why a login was not checked at all.
public enum PasswordCheckRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    case perSource(Int)
    case queueFull(Int)

    public var description: String {
        switch self {
        case .perSource(let limit): return "\(limit) logins from this address are already being checked; try again shortly"
        case .queueFull(let limit): return "\(limit) logins are already waiting to be checked; try again shortly"
        }
    }
}

/// Which password checks run, as a value: at most `concurrent` at once
/// (each holds a pool thread for a slow hash), the rest wait in arrival
/// order, and one source may have at most `perSource` checks running or
/// waiting. Without these bounds a flood of guesses fills the pool's queue
/// and real logins wait behind it until they time out.
public struct PasswordCheckQueue<Job> {
    public let limits: PasswordCheckLimits
    public private(set) var running = 0
    private var pendingBySource: [ClientAddressGroup: Int] = [:]
    private var waiting = CircularBuffer<Job>()

    public init(limits: PasswordCheckLimits) {
        self.limits = limits
    }

    public var waitingCount: Int { waiting.count }

    /// Takes a check: returns the job when it may run now, nil when it waits its turn.
    public mutating func submit(_ job: Job, from source: ClientAddressGroup) throws(PasswordCheckRefusal) -> Job? {
        let pending = pendingBySource[source] ?? 0
        guard pending < limits.perSource else { throw .perSource(limits.perSource) }
        let runsNow = running < limits.concurrent
        guard runsNow || waiting.count < limits.waiting else { throw .queueFull(limits.waiting) }
        pendingBySource[source] = pending + 1
        guard runsNow else {
            waiting.append(job)
            return nil
        }
        running += 1
        return job
    }

    /// A check from `source` finished; returns the next job to run (it takes the freed place), if one waits.
    public mutating func finish(from source: ClientAddressGroup) -> Job? {
        let pending = (pendingBySource[source] ?? 1) - 1
        pendingBySource[source] = pending > 0 ? pending : nil
        guard let next = waiting.popFirst() else {
            running -= 1
            return nil
        }
        return next
    }
}

extension PasswordCheckQueue: Sendable where Job: Sendable {}
