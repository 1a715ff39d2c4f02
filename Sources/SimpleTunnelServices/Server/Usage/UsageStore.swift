import Foundation
import NIOConcurrencyHelpers

/// Where usage is kept across restarts: the state folder's `usage.json`, or
/// the shared database, where every server's records add up.
public protocol UsageStore: Sendable {
    /// Adds records (each to its login and day); throws when they were not kept, so they are offered again.
    func add(_ records: [UsageRecord]) async throws
    /// Each login's usage on `since` and after (everything without it).
    func totals(since: UsageDay?) async throws -> [String: LoginUsage]
}

/// Usage kept in memory only: a server run without a state folder (the tests' servers).
public final class MemoryUsageStore: UsageStore {
    private let book = NIOLockedValueBox(UsageBook())

    public init() {}

    public func add(_ records: [UsageRecord]) async throws { book.withLockedValue { $0.add(records) } }
    public func totals(since: UsageDay?) async throws -> [String: LoginUsage] { book.withLockedValue { $0.totals(since: since) } }
}
