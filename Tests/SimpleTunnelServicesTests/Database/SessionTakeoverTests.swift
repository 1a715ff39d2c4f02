import Foundation
import Logging
import NIOCore
import PostgresNIO
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Several servers: a session ends on the sessions table's word, not a notice's", .timeLimit(.minutes(3)))
struct SessionTakeoverTests {
    @Test func theTableDecidesWhetherANoticedSessionEnds() {
        let here = "a/1/7"
        #expect(TakeoverVerdict(row: (here, 42), serverID: here, session: 42) == .stillHere)
        #expect(TakeoverVerdict(row: ("b/2/9", 5), serverID: here, session: 42) == .takenOver(by: "b/2/9"))
        #expect(TakeoverVerdict(row: (here, 43), serverID: here, session: 42) == .replacedHere)
        #expect(TakeoverVerdict(row: nil, serverID: here, session: 42) == .gone)
    }

    @Test func sessionNumbersCannotBeCountedOrGuessed() {
        let holders = (0..<1000).map { _ in DatabaseAddressPool.newHolder() }
        #expect(Set(holders).count == holders.count)
        #expect(holders.allSatisfy { $0 >= 1 && $0 <= UInt64(Int64.max) }, "a session number must fit the bigint column as a positive value")
        // Random over 63 bits: the chance that one of 1000 is below 2^40 is about 1 in 8000.
        #expect(holders.filter { $0 < 1 << 40 }.count <= 1)
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func aNoticeForgedByARoleWithoutGrantsEndsNothingButARealTakeoverEndsTheSession() async throws {
        try await SharedDatabaseCluster.with(logins: ["alice"]) { cluster in
            let (a, b) = (cluster.members[0], cluster.members[1])
            let aliceOnA = try await LeaseTests.login(a.fixture, as: "alice")
            let address = try await aliceOnA.openIP().get()
            let session = try await Self.session(of: "login:alice", in: cluster)
            #expect(session.server == a.database.serverID)
            #expect(session.id > 1 << 40, "session numbers still count up: \(session.id)")

            // A role that may connect but holds no grant on the tables, as any role may by default.
            _ = try await a.database.perform("creating a role") { client, logger in
                try await client.query("CREATE ROLE intruder LOGIN", logger: logger)
            }
            let intruderLocation = try DatabaseLocation(
                parsing: "postgres://intruder@localhost/postgres?host=\(cluster.postgres.folder)&port=\(cluster.postgres.port)")
            let intruder = TunnelDatabase(location: intruderLocation, password: nil, logger: TunnelFixture.logger)
            let intruderRun = Task { await intruder.run() }
            defer { intruderRun.cancel() }
            await #expect(throws: DatabaseError.self) {
                try await intruder.perform("reading the sessions") { client, logger in
                    try await client.query("SELECT count(*) FROM simpletunnel_sessions", logger: logger)
                }
            }
            // Even naming alice's real session (as if it had been guessed), the notice is only a hint.
            let payload = "\(session.server) \(session.id)"
            for _ in 0..<3 {
                _ = try await intruder.perform("forging a takeover") { client, logger in
                    try await client.query("SELECT pg_notify(\(DatabaseLeaseRequest.notificationChannel), \(payload))", logger: logger)
                }
            }
            #expect(await !aliceOnA.waitForClose(timeout: .seconds(3)), "a forged notice ended alice's session")
            #expect(cluster.log.all.contains { $0.message.hasPrefix("ignored a notice that another server took over a session") })
            #expect(a.layer.pool.leasedCount == 1)

            // A real takeover: alice's next tunnel lands on the other server.
            let aliceOnB = try await LeaseTests.login(b.fixture, as: "alice")
            #expect(try await aliceOnB.openIP().get() == address)
            #expect(await aliceOnA.waitForClose(timeout: .seconds(5)), "the session taken over was not ended")
            let ended = cluster.log.all.first { $0.message == "session ended: another server took over its client" }
            #expect(ended?.metadata["by"] == .string(b.database.serverID), "the log does not say which server took it")
            #expect(ended?.metadata["session"] == .string("\(session.id)"))
            for peer in [aliceOnA, aliceOnB] { await peer.close() }
        }
    }

    static func session(of client: String, in cluster: SharedDatabaseCluster) async throws -> (server: String, id: Int64) {
        let found = try await cluster.members[0].database.perform("test query") { postgres, logger in
            var row: (String, Int64)?
            let rows = try await postgres.query("SELECT server_id, session_id FROM simpletunnel_sessions WHERE client = \(client)", logger: logger)
            for try await found in rows.decode((String, Int64).self) { row = found }
            return row.map { [$0.0, "\($0.1)"] }
        }
        guard let found, let id = Int64(found[1]) else { throw ThrowawayPostgresError("no session row for \(client)") }
        return (found[0], id)
    }
}
