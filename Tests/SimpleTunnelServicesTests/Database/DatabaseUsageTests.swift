import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// Usage on two servers sharing PostgreSQL: each adds what it counted, and
/// either one answers `usage` with both servers' bytes together.
@Suite("Several servers: each login's usage adds up in the database", .timeLimit(.minutes(3)))
struct DatabaseUsageTests {
    /// `login` echoes `bytes` through `member`: that many each way.
    static func echo(_ bytes: Int, as login: String, through member: SharedDatabaseCluster.Member) async throws {
        let (peer, answer) = try await DatabaseAwayLoginTests.login(member.fixture, as: login)
        #expect(answer == .authenticateResult(.success))
        try await peer.send(.open(identifier: 1, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: member.fixture.echoPort))))
        #expect(await peer.next() == .openResult(identifier: 1, result: .success))
        try await peer.send(.data(identifier: 1, payload: ByteBuffer(repeating: 7, count: bytes)), .close(identifier: 1, direction: .write))
        let (echoed, _) = await peer.collectData(for: 1)
        #expect(echoed.readableBytes == bytes)
        await peer.close()
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func twoServersUsageAddsUpAndEitherAnswersForBoth() async throws {
        try await SharedDatabaseCluster.with(servers: 2, logins: ["alice", "bob"]) { cluster in
            let (first, second) = (cluster.members[0], cluster.members[1])
            try await Self.echo(10_000, as: "alice", through: first)
            try await Self.echo(3_000, as: "alice", through: second)
            try await Self.echo(5_000, as: "bob", through: second)

            // Each server hands its counts over on its own schedule; here, until both have.
            let expected: [String: UInt64] = ["alice": 13_000, "bob": 5_000]
            var report: LoginUsageReport?
            let deadline = ContinuousClock.now + .seconds(20)
            repeat {
                await second.fixture.server.flushUsage()
                report = try await first.fixture.server.usage(since: nil)
                if let report, Dictionary(uniqueKeysWithValues: report.logins.map { ($0.login, $0.bytesToClient) }) == expected { break }
                try await Task.sleep(for: .milliseconds(200))
            } while ContinuousClock.now < deadline
            let logins = try #require(report?.logins)
            #expect(logins.map(\.login) == ["alice", "bob"], "\(logins)")
            #expect(logins.map(\.bytesToClient) == [13_000, 5_000], "\(logins)")
            #expect(logins.map(\.bytesFromClient) == [13_000, 5_000], "\(logins)")
            #expect(report?.keptIn == "the database")

            // Per day: since today, the same; since tomorrow, nothing.
            let tomorrow = try #require(UsageDay(parsing: UsageDay(Date(timeIntervalSinceNow: 86_400)).text))
            #expect(try await second.fixture.server.usage(since: UsageDay(Date())).logins == logins)
            #expect(try await second.fixture.server.usage(since: tomorrow).logins.isEmpty)

            // What both servers wrote, by day and login, in the table itself.
            let rows = try await cluster.count("SELECT count(*) FROM simpletunnel_usage")
            #expect(rows == 2, "one row per login and day, whichever server added to it")
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aRefusedFlushKeepsNothingAndEachByteIsAddedOnce() async throws {
        try await SharedDatabaseCluster.with(servers: 1, logins: ["alice"]) { cluster in
            let member = cluster.members[0]
            try await Self.echo(4_000, as: "alice", through: member)
            let store = DatabaseUsage(database: member.database)
            // A store that refuses (here: a record it cannot take, a NUL in the login) keeps the flush whole or not at all.
            await #expect(throws: (any Error).self) {
                try await store.add([
                    UsageRecord(login: "carol", day: UsageDay(Date()), usage: LoginUsage(bytesFromClient: 1, lastSeen: Date())),
                    UsageRecord(login: "bad\u{0}login", day: UsageDay(Date()), usage: LoginUsage(bytesFromClient: 1, lastSeen: Date())),
                ])
            }
            #expect(try await store.totals(since: nil)["carol"] == nil, "nothing of a refused flush is kept")
            await member.fixture.server.flushUsage()
            await member.fixture.server.flushUsage()
            let alice = try await store.totals(since: nil)["alice"]
            #expect(alice?.bytesToClient == 4_000 && alice?.bytesFromClient == 4_000, "counted once: \(String(describing: alice))")
        }
    }
}
