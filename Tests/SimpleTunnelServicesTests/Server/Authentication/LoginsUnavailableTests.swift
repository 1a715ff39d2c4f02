import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A directory that cannot be asked for its first `outages` lookups, then knows `users`.
private final class ReturningDirectory: LoginDirectory, Sendable {
    private let remaining: NIOLockedValueBox<Int>
    private let users: UserDatabase

    init(outages: Int, users: UserDatabase) {
        self.remaining = NIOLockedValueBox(outages)
        self.users = users
    }

    var lookupsLeftToFail: Int { remaining.withLockedValue { $0 } }

    func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        let away = remaining.withLockedValue { left in
            defer { left = max(left - 1, 0) }
            return left > 0
        }
        return away ? eventLoop.makeFailedFuture(DirectoryAway()) : eventLoop.makeSucceededFuture(users)
    }
}

private struct DirectoryAway: Error, CustomStringConvertible {
    var description: String { "the database cannot be reached: connection refused" }
}

@Suite("Logins the server cannot check now: told to try again later, retried, never counted", .timeLimit(.minutes(2)))
struct LoginsUnavailableTests {
    static func users() throws -> UserDatabase {
        var users = UserDatabase()
        users.set("alice", hash: try PasswordHash(password: "wonderland", iterations: PasswordHash.minimumIterations))
        return users
    }

    static func settings(_ fixture: RawServerFixture, password: String = "wonderland") -> TunnelClientConnection.Settings {
        var settings = TunnelClientConnection.Settings(host: "127.0.0.1", port: fixture.port, tls: nil)
        settings.credentials = ("alice", password)
        return settings
    }

    @Test func aClientThatOffersRetryLaterGetsResultFourAndTheLimiterCountsNothing() async throws {
        let limiter = LoginRateLimiter(maximumFailures: 2)
        let directory = ReturningDirectory(outages: .max, users: try Self.users())
        let fixture = try await RawServerFixture.start {
            $0.authentication = .init(users: directory, limiter: limiter)
        }
        for _ in 0..<3 {
            let peer = try await RawTunnelPeer.connect(
                port: fixture.port, group: fixture.group, sending: .authenticate(login: "alice", password: "guess", offersRetryLater: true))
            #expect(await peer.next(timeout: .seconds(5)) == .authenticateResult(.timeout))
            #expect(await peer.waitForClose())
            await peer.close()
        }
        #expect(limiter.allows("127.0.0.1"), "logins the server could not check counted as failures")
        await fixture.stop()
    }

    @Test func ourClientSaysTheServerCannotCheckLoginsNowAndThatIsNotPermanent() async throws {
        let directory = ReturningDirectory(outages: .max, users: try Self.users())
        let fixture = try await RawServerFixture.start { $0.authentication = .init(users: directory) }
        do {
            _ = try await TunnelClientConnection.connect(settings: Self.settings(fixture), group: fixture.group, logger: TunnelFixture.logger)
            Issue.record("a login the server could not check opened the tunnel")
        } catch {
            #expect(error is TunnelLoginUnavailableError, "\(error)")
            #expect("\(error)".contains("the server cannot check logins now (its database is unavailable)"))
            #expect(!ReconnectFailure.isPermanent(error))
        }
        #expect(ReconnectFailure.isPermanent(TunnelLoginRefusedError(login: "alice")), "a wrong login is still final")
        await fixture.stop()
    }

    @Test func ourClientRetriesWithItsBackoffUntilTheLoginsCanBeCheckedAgain() async throws {
        let directory = ReturningDirectory(outages: 3, users: try Self.users())
        let fixture = try await RawServerFixture.start { $0.authentication = .init(users: directory) }
        var backoff = ReconnectBackoff()
        backoff.initial = .milliseconds(50)
        backoff.maximum = .milliseconds(200)
        let (logger, log) = CapturingLogHandler.logger()
        let service = TunnelClientService(settings: Self.settings(fixture), group: fixture.group, logger: logger, reconnect: backoff) { _, _ in [] }
        let run = Task { try await service.run() }
        for _ in 0..<500 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(service.status.state == .connected)
        #expect(directory.lookupsLeftToFail == 0)
        let retries = log.all.filter { $0.message == "the server cannot check logins now (its database is unavailable); retrying" }
        #expect(retries.count == 3, "\(log.all.map(\.message))")
        service.status.requestStop()
        try await run.value
        await fixture.stop()
    }
}
