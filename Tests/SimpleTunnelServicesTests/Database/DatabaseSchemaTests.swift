import Foundation
import Logging
import NIOPosix
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Database schema: created and migrated by the servers")
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
}
