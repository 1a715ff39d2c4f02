import Foundation
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// A wrong or missing database password is PostgreSQL's final answer: the
/// server (and `passwd --database`) says so within seconds, naming the user,
/// instead of waiting out a minute and calling the database unreachable.
@Suite("Database credentials are checked at once", .timeLimit(.minutes(2)))
struct DatabaseCredentialsTests {
    /// A role `tunnel` with `password`, which the cluster now asks for (its template trusts everyone).
    static func clusterAskingForPasswords(_ postgres: ThrowawayPostgres, password: String) throws -> DatabaseLocation {
        _ = try ThrowawayPostgres.run([
            "\(ThrowawayPostgres.binaries)/psql", "-h", postgres.folder, "-p", "\(postgres.port)", "-U", "postgres", "-d", "postgres",
            "-c", "CREATE ROLE tunnel LOGIN PASSWORD '\(password)'", "-c", "GRANT CREATE ON SCHEMA public TO tunnel",
        ], as: "postgres")
        try "local all postgres trust\nlocal all all scram-sha-256\n".write(toFile: postgres.data + "/pg_hba.conf", atomically: true, encoding: .utf8)
        _ = try ThrowawayPostgres.run(["\(ThrowawayPostgres.binaries)/pg_ctl", "-D", postgres.data, "reload"], as: "postgres")
        return try DatabaseLocation(parsing: "postgres://tunnel@localhost/postgres?host=\(postgres.folder)&port=\(postgres.port)")
    }

    static func prepare(_ location: DatabaseLocation, password: String?) async -> (error: DatabaseError?, seconds: Double) {
        let database = TunnelDatabase(location: location, password: password, logger: TunnelFixture.logger)
        let pool = Task { await database.run() }
        defer { pool.cancel() }
        let start = ContinuousClock.now
        do {
            try await database.prepare()
            return (nil, (ContinuousClock.now - start) / .seconds(1))
        } catch {
            return (error, (ContinuousClock.now - start) / .seconds(1))
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aWrongOrMissingPasswordIsNamedWithinSecondsAndTheRightOneWorks() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let location = try await ThrowawayPostgres.offThePool { try Self.clusterAskingForPasswords(postgres, password: "right horse") }

        let wrong = await Self.prepare(location, password: "wrong horse")
        #expect(wrong.error?.description.contains("PostgreSQL refused user tunnel") == true, "\(String(describing: wrong.error))")
        #expect(wrong.error?.description.contains("28P01") == true && wrong.error?.description.contains("--database-password-file") == true)
        // The old failure took the pool's full minute; seconds here, with room for the whole suite running beside it on two cores.
        #expect(wrong.seconds < 30, "took \(wrong.seconds) s")

        let missing = await Self.prepare(location, password: nil)
        #expect(missing.error?.description.contains("asks user tunnel for a password") == true, "\(String(describing: missing.error))")
        #expect(missing.seconds < 30, "took \(missing.seconds) s")

        let right = await Self.prepare(location, password: "right horse")
        #expect(right.error == nil, "\(String(describing: right.error))")
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func shuttingDownEndsTheListenerWithoutAWarning() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let (logger, lines) = CapturingLogHandler.logger()
        let database = TunnelDatabase(location: try postgres.location, password: nil, logger: logger)
        let pool = Task { await database.run() }
        try await database.prepare()
        #expect(await AdmissionPeers.eventually { database.isListening })
        pool.cancel()
        await pool.value
        try await Task.sleep(for: .milliseconds(1500))  // a retry would have logged by now
        let warnings = lines.all.filter { $0.message.contains("not listening for sessions") }
        #expect(warnings.isEmpty, "\(warnings)")
    }
}
