import NIOCore
import SimpleTunnelServices

/// What one login check costs with the database's logins: the highest PBKDF2
/// iteration count stored, so that a known login (whatever its own count) and
/// an unknown one take equally long and timing tells nothing. Asked of the
/// database once, then again every `refreshInterval` (a lower maximum after
/// logins were changed); a record seen with a higher count raises it at once.
struct LoginCheckCost: Sendable {
    static let refreshInterval = TimeAmount.minutes(10)

    private(set) var iterations: Int?
    private var askedAt: NIODeadline?

    /// The cost to use now; nil when the database must be asked (`found`).
    func current(now: NIODeadline = .now()) -> Int? {
        guard let iterations, let askedAt, now < askedAt + Self.refreshInterval else { return nil }
        return iterations
    }

    /// The database's highest count (nil: no logins, so what `passwd` writes).
    mutating func found(_ highest: Int?, now: NIODeadline = .now()) {
        iterations = max(highest ?? PasswordHash.defaultIterations, PasswordHash.minimumIterations)
        askedAt = now
    }

    /// A record read for a check: one slower than the known maximum raises it for every later check.
    mutating func saw(_ recordIterations: Int) {
        guard let known = iterations, recordIterations > known else { return }
        iterations = recordIterations
    }
}
