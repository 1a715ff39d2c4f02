import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Several servers: a login while the database is away is told to try again later", .timeLimit(.minutes(3)))
struct DatabaseAwayLoginTests {
    static func login(_ fixture: RawServerFixture, as login: String, password: String? = nil) async throws -> (RawTunnelPeer, TunnelMessage?) {
        let peer = try await RawTunnelPeer.connect(
            port: fixture.port, group: fixture.group,
            sending: .authenticate(login: login, password: password ?? "pw-\(login)", offersRetryLater: true))
        // Longer than the database's deadline: the answer for want of it must arrive.
        return (peer, await peer.next(timeout: .seconds(30)))
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func stopTheDatabaseThenLogInTryAgainLaterAtOnceUncountedTunnelsCarryOnAndLoginsReturnWithin5s() async throws {
        let deadline = Duration.seconds(5)
        try await SharedDatabaseCluster.with(servers: 1, logins: ["alice", "bob"], timeout: deadline) { cluster in
            let server = cluster.members[0].fixture
            let (alice, accepted) = try await Self.login(server, as: "alice")
            #expect(accepted == .authenticateResult(.success))
            try await alice.send(.open(identifier: 1, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: server.echoPort))))
            #expect(await alice.next() == .openResult(identifier: 1, result: .success))

            try await cluster.postgres.stopServerOffThePool(mode: "fast")
            let stopped = ContinuousClock.now
            // More than the limiter's 5 failures from 127.0.0.1, one after another (the limiter counts an attempt
            // from its start until it is forgiven): none is a failure, so none is refused.
            var answers: [TunnelMessage?] = []
            var waits: [Duration] = []
            for _ in 0..<(LoginRateLimiter().maximumFailures + 1) {
                let asked = ContinuousClock.now
                let (peer, answer) = try await Self.login(server, as: "bob")
                waits.append(ContinuousClock.now - asked)
                #expect(await peer.waitForClose())
                await peer.close()
                answers.append(answer)
            }
            // Away long enough for PostgresNIO's own pool to back off for seconds between tries, had it kept trying;
            // logins asked meanwhile are all told to try again later.
            while ContinuousClock.now - stopped < .seconds(20) {
                let (peer, answer) = try await Self.login(server, as: "bob")
                await peer.close()
                answers.append(answer)
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(answers.allSatisfy { $0 == .authenticateResult(.timeout) }, "\(answers)")
            // The first may wait out the database's deadline (the pool retries; at once when it finds nothing to
            // connect to); once a probe found no database the rest are answered without waiting for the pool. One
            // that waited for the pool could not answer before the deadline, so the deadline tells them apart; an
            // answer at once took up to 2.2 s on a busy CI machine (a TLS handshake and a login among a full
            // parallel test run), hence a deadline well above that.
            #expect(waits.dropFirst(2).allSatisfy { $0 < deadline }, "\(waits)")

            // The open tunnel and its flow carry on.
            try await alice.send(.data(identifier: 1, payload: ByteBuffer(string: "still here")), .close(identifier: 1, direction: .write))
            let (echoed, closedWith) = await alice.collectData(for: 1)
            #expect(echoed == ByteBuffer(string: "still here"))
            #expect(closedWith == .write)

            // One line per 10 s at most, naming the database and the error.
            let outages = cluster.log.all.filter { $0.message.hasPrefix("database outage") }
            let seconds = Int((ContinuousClock.now - stopped).components.seconds)
            #expect(!outages.isEmpty && outages.count <= seconds / 10 + 1, "\(outages.map(\.message))")
            if let line = outages.first {
                #expect("\(line.metadata["database"] ?? "")".hasPrefix("postgres://postgres@"))
                let reason = "\(line.metadata["reason"] ?? "")"
                #expect(reason.contains("SQLSTATE") || reason.contains("connection") || reason.contains("answer"), "\(reason)")
            }

            try await cluster.postgres.startServerOffThePool()
            let back = ContinuousClock.now
            var loggedIn = false
            while !loggedIn && ContinuousClock.now - back < .seconds(20) {
                let (bob, answer) = try await Self.login(server, as: "bob")
                await bob.close()
                loggedIn = answer == .authenticateResult(.success)
                if !loggedIn { try await Task.sleep(for: .milliseconds(200)) }
            }
            let took = ContinuousClock.now - back
            #expect(loggedIn, "logins did not resume once the database was back")
            // A probe a second finds the database back and a fresh pool serves at once (PostgresNIO's own pool
            // would wait out its backoff, up to a minute after a long outage).
            #expect(took < .seconds(5), "logins came back \(took) after the database")
            #expect(cluster.log.all.contains { $0.message.hasPrefix("the database answers again") }, "\(cluster.log.all.map(\.message))")
            print("a login succeeded \(took) after the database returned")
            await alice.close()
        }
    }
}
