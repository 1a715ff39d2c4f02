import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Several servers: logins in the database cost the same, and a malformed one is the client's failure", .timeLimit(.minutes(3)))
struct DatabaseLoginTests {
    @Test func theCostIsAskedOnceRaisedBySlowerRecordsAndAskedAgainLater() {
        var cost = LoginCheckCost()
        let start = NIODeadline.now()
        #expect(cost.current(now: start) == nil, "nothing known yet: ask the database")
        cost.found(400_000, now: start)
        #expect(cost.current(now: start + .minutes(1)) == 400_000)
        cost.saw(100_000)
        cost.saw(500_000)
        #expect(cost.current(now: start + .minutes(1)) == 500_000)
        #expect(cost.current(now: start + LoginCheckCost.refreshInterval) == nil, "the maximum is asked again now and then")
        cost.found(nil, now: start)
        #expect(cost.iterations == PasswordHash.defaultIterations, "no logins: what passwd writes")
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func unknownSlowAndFastLoginsCostTheHighestCountStored() async throws {
        try await SharedDatabaseCluster.with(servers: 1) { cluster in
            let database = cluster.members[0].database
            let eventLoop = cluster.members[0].fixture.group.next()
            let logins = DatabaseLogins(database: database)
            try await logins.set("slow", hash: LoginCostTests.record(400_000))
            try await logins.set("fast", hash: LoginCostTests.record(100_000))
            func cost(_ login: String) async throws -> Int {
                LoginCostTests.iterations(checking: login, in: try await logins.records(for: login, on: eventLoop).get())
            }
            #expect(try await cost("nobody") == 400_000)
            #expect(try await cost("fast") == 400_000)
            #expect(try await cost("slow") == 400_000)

            // Kept, not asked per login: a slower login stored since shows only once it is read.
            try await logins.set("slower", hash: LoginCostTests.record(500_000))
            #expect(try await cost("nobody") == 400_000)
            #expect(try await cost("slower") == 500_000)
            #expect(try await cost("nobody") == 500_000)
            #expect(try await cost("fast") == 500_000)
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func aValueTheDatabaseRefusesAsMalformedIsTheClientsNotAnOutage() async throws {
        try await SharedDatabaseCluster.with(servers: 1, logins: ["alice"]) { cluster in
            let member = cluster.members[0]
            let eventLoop = member.fixture.group.next()
            // PostgreSQL text cannot hold NUL: SQLSTATE 22021.
            await #expect(throws: LoginDirectoryRefusedLogin.self) {
                _ = try await DatabaseLogins(database: member.database).records(for: "al\u{0}ice", on: eventLoop).get()
            }
            do {
                _ = try await member.layer.pool.lease(for: "login:al\u{0}ice", on: eventLoop).get()
                Issue.record("a client key with a NUL byte was leased an address")
            } catch let error as DatabaseError {
                if case .invalidValue = error {} else { Issue.record("not a malformed value: \(error)") }
            }
            #expect(!cluster.log.all.contains { $0.message.hasPrefix("database outage") }, "a client's malformed value was logged as an outage")
            #expect(cluster.log.all.contains { $0.message.hasPrefix("the database refused a value a client sent") })
            // The database is up all along: alice still logs in.
            await (try await LeaseTests.login(member.fixture, as: "alice")).close()
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func aLostConnectionIsAnOutageAndAMissingGrantIsRefused() async throws {
        try await SharedDatabaseCluster.with(servers: 1, timeout: .seconds(5)) { cluster in
            let database = cluster.members[0].database
            _ = try await database.perform("creating a role") { client, logger in
                try await client.query("CREATE ROLE stranger LOGIN", logger: logger)
            }
            let stranger = TunnelDatabase(
                location: try DatabaseLocation(parsing: "postgres://stranger@localhost/postgres?host=\(cluster.postgres.folder)&port=\(cluster.postgres.port)"),
                password: nil, logger: TunnelFixture.logger)
            let run = Task { await stranger.run() }
            defer { run.cancel() }
            do {
                _ = try await DatabaseLogins(database: stranger).records(for: "alice", on: cluster.members[0].fixture.group.next()).get()
                Issue.record("a role without grants read the logins")
            } catch let error as DatabaseError {
                if case .refused(let reason) = error {
                    #expect(reason.contains("42501"), "\(reason)")
                } else {
                    Issue.record("not a refusal: \(error)")
                }
            }
            try await cluster.postgres.stopServerOffThePool()
            do {
                _ = try await DatabaseLogins(database: database).records(for: "alice", on: cluster.members[0].fixture.group.next()).get()
                Issue.record("a login was looked up with the database stopped")
            } catch let error as DatabaseError {
                if case .unavailable = error {} else { Issue.record("not an outage: \(error)") }
            }
            #expect(cluster.log.all.contains { $0.message.hasPrefix("database outage") })
        }
    }
}
