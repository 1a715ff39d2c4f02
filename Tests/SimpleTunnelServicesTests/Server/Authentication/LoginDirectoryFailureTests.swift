import NIOCore
import Testing
@testable import SimpleTunnelServices

/// A directory whose every lookup fails with `error`.
private struct FailingDirectory: LoginDirectory {
    let error: any Error & Sendable

    func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        eventLoop.makeFailedFuture(error)
    }
}

private struct DirectoryAway: Error {}

@Suite("Logins whose directory fails: the client's fault or the server's", .timeLimit(.minutes(2)))
struct LoginDirectoryFailureTests {
    static func attempt(_ fixture: RawServerFixture) async throws -> TunnelMessage? {
        let peer = try await RawTunnelPeer.connect(
            port: fixture.port, group: fixture.group, sending: .authenticate(login: "mallory", password: "guess"))
        let answer = await peer.next(timeout: .seconds(5))
        #expect(await peer.waitForClose())
        await peer.close()
        return answer
    }

    @Test(.timeLimit(.minutes(3)))
    func aLoginTheDirectoryRefusesAsMalformedIsAFailedLoginCountedAgainstItsAddress() async throws {
        let limiter = LoginRateLimiter(maximumFailures: 2)
        let fixture = try await RawServerFixture.start {
            $0.authentication = .init(users: FailingDirectory(error: LoginDirectoryRefusedLogin(reason: "invalid byte sequence (SQLSTATE 22021)")), limiter: limiter)
        }
        for _ in 0..<2 {
            #expect(try await Self.attempt(fixture) == .authenticateResult(.refused))
        }
        #expect(!limiter.allows("127.0.0.1"), "malformed logins did not count against the address's failure limit")
        await fixture.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aDirectoryThatCannotBeAskedLeavesTheLoginUnansweredAndUncounted() async throws {
        let limiter = LoginRateLimiter(maximumFailures: 2)
        let fixture = try await RawServerFixture.start {
            $0.authentication = .init(users: FailingDirectory(error: DirectoryAway()), limiter: limiter)
        }
        for _ in 0..<3 {
            #expect(try await Self.attempt(fixture) == nil, "a login the server could not check was answered")
        }
        #expect(limiter.allows("127.0.0.1"))
        await fixture.stop()
    }
}
