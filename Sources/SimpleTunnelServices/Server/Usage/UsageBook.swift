import Foundation

/// Stored usage per login and day, and the sums `tunnel-server usage` shows.
public struct UsageBook: Codable, Sendable, Equatable {
    /// By login, then by day.
    public private(set) var logins: [String: [UsageDay: LoginUsage]] = [:]

    public init() {}

    public mutating func add(_ records: [UsageRecord]) {
        for record in records {
            logins[record.login, default: [:]][record.day] =
                logins[record.login]?[record.day].map { $0.adding(record.usage) } ?? record.usage
        }
    }

    /// Each login's usage on `since` and the days after (all days without it); a login with none then is left out.
    public func totals(since: UsageDay? = nil) -> [String: LoginUsage] {
        logins.compactMapValues { days in
            days.filter { day in since.map { day.key >= $0 } ?? true }.values.reduce(nil as LoginUsage?) { $0?.adding($1) ?? $1 }
        }
    }
}
