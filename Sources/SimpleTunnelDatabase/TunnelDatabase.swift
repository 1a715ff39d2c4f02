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
/// on: they need nothing from it) and succeed again once it is back: a probe
/// of one connection a second finds it, and a fresh pool serves from then on
/// (`DatabaseHealth`, `DatabasePools`).
public final class TunnelDatabase: Sendable {
    public let location: DatabaseLocation
    /// This process among the servers sharing the database; sessions name it.
    public let serverID: String
    let pools: DatabasePools
    let timeout: Duration
    let logger: Logger
    /// Kept for the connections made outside the pool (`checkCredentials`, the probe, the listeners); the pool has its own copy.
    let password: String?
    private enum FailureLog: Hashable { case outage, clientValue, refusal }
    private let failureLogs = NIOLockedValueBox<[FailureLog: LineRateLimiter]>([:])
    /// Whether the database answers; while it does not, a probe tries it every second.
    let health = NIOLockedValueBox(DatabaseHealth())
    let probeLog = NIOLockedValueBox(LineRateLimiter(interval: .seconds(10)))
    /// Why the last probe did not get through, for the operations answered at once meanwhile.
    let lastProbeFailure = NIOLockedValueBox<String?>(nil)
    /// Told the session number when a notice says another server took over a session of this one (a hint: see `DatabaseSessionTakeover`).
    let sessionEndHandlers = NIOLockedValueBox<[@Sendable (UInt64) -> Void]>([])
    /// Told a login the database no longer has (see `DatabaseLoginRemoval`).
    let loginRemovalHandlers = NIOLockedValueBox<[@Sendable (String) -> Void]>([])
    /// What a login check costs (see `DatabaseLogins`), found once and kept.
    let loginCost = NIOLockedValueBox(LoginCheckCost())
    /// Whether this server hears about sessions taken over now (see `DatabaseSessionListener`).
    let listening = NIOLockedValueBox(false)
    /// Whether `run` has started the pool: PostgresNIO warns when a connection
    /// is asked for first, as it may be when `run` is a task just made.
    private let poolRunning = NIOLockedValueBox(false)

    public init(location: DatabaseLocation, password: String?, timeout: Duration = .seconds(5), logger: Logger) {
        self.location = location
        self.timeout = timeout
        self.logger = logger
        self.password = password
        self.serverID = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UInt32.random(in: .min ... .max))"
        var configuration = location.clientConfiguration(password: password)
        configuration.options.connectTimeout = timeout
        configuration.options.maximumConnections = 8
        let poolConfiguration = configuration
        self.pools = DatabasePools { PostgresClient(configuration: poolConfiguration, backgroundLogger: logger) }
        if let warning = location.transportWarning {
            logger.warning("\(warning)", metadata: ["database": "\(location)"])
        }
    }

    /// Runs the connection pool, and listens for sessions other servers took
    /// over and logins removed, until the task is cancelled; start it before anything else.
    /// While the database is away it is probed every second (`DatabaseHealth`).
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.pools.run { self.poolRunning.withLockedValue { $0 = true } }
            }
            group.addTask { await self.listenForTakenOverSessions() }
            group.addTask { await self.listenForRemovedLogins() }
            group.addTask { await self.probeWhileAway() }
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

    func whenTakeoverNoticed(_ end: @escaping @Sendable (UInt64) -> Void) {
        sessionEndHandlers.withLockedValue { $0.append(end) }
    }

    /// Connects, then brings the schema up to date (see `DatabaseSchema`).
    public func prepare() async throws(DatabaseError) {
        // A wrong password is final: said now, not after the minute below.
        try await checkCredentials(password: password)
        // A server starting may wait longer for its database than a client waits for a login.
        try await perform("migrating the schema", timeout: max(timeout, .seconds(60))) { client, logger in
            try await DatabaseSchema.migrate(client, logger: logger)
        }
    }

    /// `body` against the database within `timeout`. A failure is sorted by
    /// whose it is (`DatabaseError.classifying`) and logged as such, at most once per 10 s each.
    /// With the default deadline, an operation while the last probe found no
    /// database is answered at once: it could only wait out its deadline.
    func perform<Value: Sendable>(
        _ what: String, timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> Value
    ) async throws(DatabaseError) -> Value {
        let logger = self.logger
        if timeout == nil, health.withLockedValue({ $0.answersAtOnce }) {
            let why = lastProbeFailure.withLockedValue { $0 } ?? "no answer"
            let failure = DatabaseError.unavailable("\(why) (at the last try; trying again every second)")
            note(what, failure)
            throw failure
        }
        let timeout = timeout ?? self.timeout
        await untilThePoolRuns()
        let pool = pools.acquire()
        defer { pools.release(pool) }
        let client = pool.client
        do {
            let value = try await withThrowingTaskGroup(of: Value.self) { group in
                group.addTask { try await body(client, logger) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw DatabaseError.unavailable("no answer within \(timeout)")
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw DatabaseError.unavailable("cancelled") }
                return first
            }
            health.withLockedValue { $0.operationSucceeded() }
            return value
        } catch {
            let failure = DatabaseError.classifying(error)
            if case .unavailable = failure {
                health.withLockedValue { $0.operationFoundItAway(now: .now) }
            } else {
                // The database answered, if only to refuse.
                health.withLockedValue { $0.operationSucceeded() }
            }
            note(what, failure)
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

    /// Every client can cause a failed operation (while the database is away,
    /// or with a value it refuses): one line per 10 s for each kind.
    private func note(_ what: String, _ error: DatabaseError) {
        let kind: FailureLog
        switch error {
        case .schemaTooNew, .invalidLocation, .password: return
        case .unavailable: kind = .outage
        case .invalidValue: kind = .clientValue
        case .refused, .malformed: kind = .refusal
        }
        guard let unlogged = failureLogs.withLockedValue({ $0[kind, default: LineRateLimiter(interval: .seconds(10))].admit() }) else { return }
        let metadata: Logger.Metadata = ["reason": "\(error)", "database": "\(location)", "unlogged": "\(unlogged)"]
        switch kind {
        case .outage: logger.warning("database outage: \(what) failed", metadata: metadata)
        case .clientValue: logger.notice("the database refused a value a client sent, \(what)", metadata: metadata)
        case .refusal: logger.error("database operation failed: \(what)", metadata: metadata)
        }
    }
}
