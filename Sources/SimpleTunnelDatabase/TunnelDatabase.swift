import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import SimpleTunnelServices

/// The PostgreSQL database that several servers share (`--database`): their
/// logins, the addresses of known clients and who holds each client's session.
/// Every operation is bounded by `timeout`, so that while the database is
/// unreachable new logins and leases fail promptly (tunnels already up carry
/// on: they need nothing from it) and succeed again once it is back.
public final class TunnelDatabase: Sendable {
    public let location: DatabaseLocation
    /// This process among the servers sharing the database; sessions name it.
    public let serverID: String
    let client: PostgresClient
    let timeout: Duration
    let logger: Logger
    private let unavailableLog = NIOLockedValueBox(LogRateLimiter(interval: .seconds(10)))
    /// Told the session number when another server took over a session of this one.
    let sessionEndHandlers = NIOLockedValueBox<[@Sendable (UInt64) -> Void]>([])
    /// Whether this server hears about sessions taken over now (see `DatabaseSessionListener`).
    let listening = NIOLockedValueBox(false)
    /// Whether `run` has started the pool: PostgresNIO warns when a connection
    /// is asked for first, as it may be when `run` is a task just made.
    private let poolRunning = NIOLockedValueBox(false)

    public init(location: DatabaseLocation, password: String?, timeout: Duration = .seconds(5), logger: Logger) {
        self.location = location
        self.timeout = timeout
        self.logger = logger
        self.serverID = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UInt32.random(in: .min ... .max))"
        var configuration = location.clientConfiguration(password: password)
        configuration.options.connectTimeout = timeout
        configuration.options.maximumConnections = 8
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Runs the connection pool, and listens for sessions other servers took
    /// over, until the task is cancelled; start it before anything else.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                self.poolRunning.withLockedValue { $0 = true }
                await self.client.run()
            }
            group.addTask { await self.listenForTakenOverSessions() }
        }
    }

    /// Waits (a second at most: `perform`'s timeout covers a pool never run) until `run` has begun.
    private func untilThePoolRuns() async {
        guard !poolRunning.withLockedValue({ $0 }) else { return }
        for _ in 0..<1000 where !poolRunning.withLockedValue({ $0 }) {
            try? await Task.sleep(for: .milliseconds(1))
        }
        // `client.run()` marks the pool running first thing; give it that moment.
        try? await Task.sleep(for: .milliseconds(1))
    }

    func whenSessionEnded(_ end: @escaping @Sendable (UInt64) -> Void) {
        sessionEndHandlers.withLockedValue { $0.append(end) }
    }

    /// Connects, then brings the schema up to date (see `DatabaseSchema`).
    public func prepare() async throws(DatabaseError) {
        // A server starting may wait longer for its database than a client waits for a login.
        try await perform("migrating the schema", timeout: max(timeout, .seconds(60))) { client, logger in
            try await DatabaseSchema.migrate(client, logger: logger)
        }
    }

    /// `body` against the database within `timeout`; any failure is `.unavailable`, logged at most once per 10 s.
    func perform<Value: Sendable>(
        _ what: String, timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> Value
    ) async throws(DatabaseError) -> Value {
        let client = self.client
        let logger = self.logger
        let timeout = timeout ?? self.timeout
        await untilThePoolRuns()
        do {
            return try await withThrowingTaskGroup(of: Value.self) { group in
                group.addTask { try await body(client, logger) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw DatabaseError.unavailable("no answer within \(timeout)")
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw DatabaseError.unavailable("cancelled") }
                return first
            }
        } catch let error as DatabaseError {
            noteUnavailable(what, error)
            throw error
        } catch let error as PostgresTransactionError {
            // A decision of ours inside a transaction (the schema too new) is said as it is.
            let failure = (error.closureError as? DatabaseError) ?? .unavailable(String(reflecting: error))
            noteUnavailable(what, failure)
            throw failure
        } catch {
            let failure = DatabaseError.unavailable(String(reflecting: error))
            noteUnavailable(what, failure)
            throw failure
        }
    }

    /// The event-loop form of `perform`, for channel handlers.
    func perform<Value: Sendable>(
        _ what: String, on eventLoop: EventLoop, _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> Value
    ) -> EventLoopFuture<Value> {
        let promise = eventLoop.makePromise(of: Value.self)
        promise.completeWithTask { try await self.perform(what, body) }
        return promise.futureResult
    }

    /// Every client can cause a failed operation while the database is away: one line per 10 s.
    private func noteUnavailable(_ what: String, _ error: DatabaseError) {
        if case .schemaTooNew = error { return }
        guard let unlogged = unavailableLog.withLockedValue({ $0.admit() }) else { return }
        logger.warning(
            "database operation failed: \(what)",
            metadata: ["reason": "\(error)", "database": "\(location)", "unlogged": "\(unlogged)"])
    }
}
