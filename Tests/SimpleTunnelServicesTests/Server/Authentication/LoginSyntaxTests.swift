import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A users file that remembers every login it was asked about.
final class RecordingLoginDirectory: LoginDirectory {
    let users: UserDatabase
    private let asked = NIOLockedValueBox<[String]>([])

    var logins: [String] { asked.withLockedValue { $0 } }

    init(_ users: UserDatabase) {
        self.users = users
    }

    func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        asked.withLockedValue { $0.append(login) }
        return users.records(for: login, on: eventLoop)
    }
}

@Suite("Logins are checked at the wire", .timeLimit(.minutes(3)))
struct LoginSyntaxTests {
    @Test(arguments: ["alice", "Ünïcode-Ⅻ", "a.b@c", String(repeating: "x", count: 64)])
    func loginsPasswdAcceptsAreLogins(login: String) {
        #expect(TunnelLoginSyntax.problem(with: login) == nil)
        #expect(UserDatabase.isValidLogin(login))
    }

    @Test(arguments: [
        "", "a:b", "a b", "a\nb", "a\rb", "a\0b", "a\u{7F}b", "a\u{202E}b", "a\u{2028}b", "a\tb",
        String(repeating: "x", count: 65), String(repeating: "\u{301}", count: 300),
    ])
    func anythingElseIsNot(login: String) {
        #expect(TunnelLoginSyntax.problem(with: login) != nil, "\(login.debugDescription)")
        #expect(!UserDatabase.isValidLogin(login))
    }

    @Test func peerTextIsQuotedSoNoPeerCanWriteALineOfItsOwn() {
        #expect(PeerText.quoted("alice") == "\"alice\"")
        #expect(PeerText.quoted("a\"b\\c") == #""a\"b\\c""#)
        let forged = PeerText.quoted("eve\n2026-11-26 info : login=admin login accepted\0\u{202E}")
        #expect(!forged.contains("\n") && !forged.contains("\0") && !forged.unicodeScalars.contains("\u{202E}"))
        #expect(forged.contains(#"\n"#) && forged.contains(#"\u{0}"#) && forged.contains(#"\u{202e}"#))
        #expect(PeerText.quoted(String(repeating: "y", count: 500), limit: 8) == "\"yyyyyyyy…\"")
    }

    @Test func aMalformedLoginIsAFailedAttemptThatReachesNeitherTheDirectoryNorALogLine() async throws {
        var users = UserDatabase()
        users.set("alice", hash: try PasswordHash(password: "right", iterations: PasswordHash.minimumIterations))
        let directory = RecordingLoginDirectory(users)
        let (logger, lines) = CapturingLogHandler.logger()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var settings = TunnelServer.Settings()
        settings.port = 0
        settings.authentication = .init(users: directory, limiter: LoginRateLimiter(maximumFailures: 3))
        let server = try await TunnelServer.start(settings: settings, group: group, logger: logger)
        let port = server.localAddress.port ?? 0

        let forged = "eve\n2026-11-26T00:00:00+0000 notice tunnel-server : login=admin login accepted"
        for (login, password) in [("alice", "wrong"), (forged, "x"), ("alice\0admin", "right")] {
            let peer = try await RawTunnelPeer.connect(port: port, group: group)
            try await peer.send(.authenticate(login: login, password: password))
            #expect(await peer.next(timeout: .seconds(30)) == .authenticateResult(.refused), "\(login.debugDescription)")
            await peer.close()
        }
        // Three failures from this address, two of them malformed: now the right login is locked out too.
        let locked = try await RawTunnelPeer.connect(port: port, group: group)
        try await locked.send(.authenticate(login: "alice", password: "right"))
        #expect(await locked.next(timeout: .seconds(30)) == .authenticateResult(.refused))
        await locked.close()

        #expect(directory.logins == ["alice"], "only the well-formed login was looked up")
        for line in lines.all {
            let text = ([line.message] + line.metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
            #expect(!text.contains("\n") && !text.contains("\0"), "\(text.debugDescription)")
        }
        #expect(lines.all.contains { "\($0.metadata["login"] ?? "")".contains(#"eve\n2026"#) }, "the forged login is logged, escaped")
        await server.shutdown()
        try await group.shutdownGracefully()
    }
}
