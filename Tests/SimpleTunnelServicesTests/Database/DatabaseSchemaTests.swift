import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Database schema: created and migrated by the servers", .timeLimit(.minutes(3)))
struct DatabaseSchemaTests {
    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func serversStartingAtOnceMigrateOnceAndAgainChangesNothingAndANewerSchemaIsRefused() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let databases = try (0..<4).map { _ in
            TunnelDatabase(location: try postgres.location, password: nil, timeout: .seconds(20), logger: TunnelFixture.logger)
        }
        let runs = databases.map { database in Task { await database.run() } }
        defer { runs.forEach { $0.cancel() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in databases {
                group.addTask { try await database.prepare() }
            }
            try await group.waitForAll()
        }
        try await databases[0].prepare()
        let versions = try await databases[0].perform("test query") { client, logger in
            var versions: [Int] = []
            for try await version in try await client.query("SELECT version FROM simpletunnel_schema ORDER BY version", logger: logger)
                .decode(Int.self)
            {
                versions.append(version)
            }
            return versions
        }
        #expect(versions == DatabaseSchema.migrations.map(\.version))

        try await databases[0].perform("test query") { client, logger in
            _ = try await client.query("INSERT INTO simpletunnel_schema (version) VALUES (\(DatabaseSchema.latestVersion + 1))", logger: logger)
        }
        await #expect(throws: DatabaseError.schemaTooNew(found: DatabaseSchema.latestVersion + 1, known: DatabaseSchema.latestVersion)) {
            try await databases[1].prepare()
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aLoginWrittenToTheDatabaseIsCheckedLikeOneFromTheUsersFile() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let database = TunnelDatabase(location: try postgres.location, password: nil, timeout: .seconds(20), logger: TunnelFixture.logger)
        let run = Task { await database.run() }
        defer { run.cancel() }
        try await database.prepare()
        let logins = DatabaseLogins(database: database)
        try await logins.set("alice", hash: try PasswordHash(password: "first", iterations: PasswordHash.minimumIterations))
        try await logins.set("alice", hash: try PasswordHash(password: "second", iterations: PasswordHash.minimumIterations))
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let records = try await logins.records(for: "alice", on: eventLoop).get()
        #expect(records.verify(login: "alice", password: "second"))
        #expect(!records.verify(login: "alice", password: "first"))
        let unknown = try await logins.records(for: "mallory", on: eventLoop).get()
        #expect(unknown.users.isEmpty)
        #expect(!unknown.verify(login: "mallory", password: "second"))
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func aDatabaseOfTheFirstVersionKeepsItsLeasesWhenTheIPv6TableIsAdded() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let database = TunnelDatabase(location: try postgres.location, password: nil, timeout: .seconds(20), logger: TunnelFixture.logger)
        let run = Task { await database.run() }
        defer { run.cancel() }
        // What a server of the first schema left behind, with one remembered lease.
        let first = try #require(DatabaseSchema.migrations.first)
        try await database.perform("test query") { client, logger in
            try await client.query(
                "CREATE TABLE simpletunnel_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", logger: logger)
            for statement in first.statements {
                try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await client.query("INSERT INTO simpletunnel_schema (version) VALUES (1)", logger: logger)
            try await client.query(
                "INSERT INTO simpletunnel_leases (client, address, pool, server_id) VALUES ('login:alice', '10.90.0.7', '10.90.0.2-10.90.0.254', 'old')",
                logger: logger)
        }
        try await database.prepare()
        let rows = try await database.perform("test query") { client, logger in
            var rows: [String] = []
            for try await (client, address) in try await client.query("SELECT client, host(address) FROM simpletunnel_leases", logger: logger)
                .decode((String, String).self)
            {
                rows.append("\(client) \(address)")
            }
            for try await count in try await client.query("SELECT count(*)::bigint FROM simpletunnel_ipv6_leases", logger: logger).decode(Int.self) {
                rows.append("ipv6 rows \(count)")
            }
            return rows
        }
        #expect(rows == ["login:alice 10.90.0.7", "ipv6 rows 0"])

        // Alice, back on a dual-stack server, keeps her IPv4 address and gains an IPv6 one.
        let pool = DatabaseAddressPool(
            range: try #require(IPv4Address("10.90.0.2"))...(try #require(IPv4Address("10.90.0.254"))),
            ipv6Range: try #require(IPv6Address("fd00:90::2"))...(try #require(IPv6Address("fd00:90::ffff"))), database: database)
        let lease = try await pool.lease(for: "login:alice", on: MultiThreadedEventLoopGroup.singleton.next()).get()
        #expect(lease?.address?.description == "10.90.0.7" && lease?.ipv6Address?.description == "fd00:90::2", "\(String(describing: lease))")
    }
}
