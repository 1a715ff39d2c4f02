import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// While the database is away, one connection of its own every second (its
/// pool would wait up to a minute between tries); the first that gets through
/// puts a fresh pool in the old one's place (`DatabaseHealth`, `DatabasePools`).
extension TunnelDatabase {
    func probeWhileAway() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            guard health.withLockedValue({ $0.probeDue(now: .now) }) else { continue }
            let failure = await probe()
            if Task.isCancelled { return }
            lastProbeFailure.withLockedValue { last in
                guard let failure else { return last = nil }
                if case .unavailable(let reason) = failure { last = reason } else { last = "\(failure)" }
            }
            let (verdict, awaySince) = health.withLockedValue { health in
                let since = health.awaySince
                return (health.probeFinished(gotThrough: failure == nil), since)
            }
            switch verdict {
            case .replacePool:
                await pools.replace()
                let away = awaySince.map { " after \(Self.seconds(ContinuousClock.now - $0)) s" } ?? ""
                logger.notice("the database answers again\(away); logins and leases are served from a fresh connection pool", metadata: ["database": "\(location)"])
            case .stillAway:
                guard let unlogged = probeLog.withLockedValue({ $0.admit() }) else { break }
                logger.warning(
                    "the database is still away; logins are told to try again later, and it is tried every second",
                    metadata: ["database": "\(location)", "reason": "\(failure.map { "\($0)" } ?? "")", "unlogged": "\(unlogged)"])
            case .keepPool:
                break
            }
        }
    }

    /// One connection and one query, within the operations' deadline; nil when it got through, else why not.
    func probe() async -> DatabaseError? {
        do {
            let connection = try await connectAlone()
            try await Self.closing(connection) {
                try await Self.within(self.timeout) {
                    _ = try await connection.query("SELECT 1", logger: self.logger)
                }
            }
            return nil
        } catch {
            return DatabaseError.classifying(error)
        }
    }

    /// A connection outside the pool (the probe's, a listener's), made within the operations' deadline.
    func connectAlone() async throws -> PostgresConnection {
        var configuration = try location.connectionConfiguration(password: password)
        configuration.options.connectTimeout = TimeAmount(timeout)
        let configured = configuration, logger = self.logger
        // Cancelled at the deadline rather than raced against it: a connection made is always returned, to be closed.
        let attempt = Task {
            try await PostgresConnection.connect(configuration: configured, id: Self.nextConnectionNumber(), logger: logger)
        }
        let deadline = Task {
            try await Task.sleep(for: timeout)
            attempt.cancel()
        }
        defer { deadline.cancel() }
        return try await attempt.value
    }

    /// `body`, then `connection` closed and waited for, whatever `body` did (PostgresNIO asserts that a
    /// connection let go of is closed).
    static func closing<Value>(_ connection: PostgresConnection, _ body: () async throws -> Value) async throws -> Value {
        let value: Value
        do {
            value = try await body()
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        return value
    }

    /// `body`, cancelled and failed with `unavailable` at `deadline`.
    static func within<Value: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: deadline)
                throw DatabaseError.unavailable("no answer within \(deadline)")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw DatabaseError.unavailable("cancelled") }
            return first
        }
    }

    private static let connectionNumbers = NIOLockedValueBox(0)

    /// Numbers for the log lines of connections outside the pool.
    static func nextConnectionNumber() -> Int {
        connectionNumbers.withLockedValue { number in
            number += 1
            return number
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let tenths = (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 10
        return "\(tenths.rounded() / 10)"
    }
}
