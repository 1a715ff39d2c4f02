import Foundation
import NIOCore
import NIOPosix
import Prometheus
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Password authentication", .timeLimit(.minutes(2)))
struct AuthenticationTests {
    static let iterations = PasswordHash.minimumIterations

    @Test func aHashMatchesOnlyItsPasswordAndSurvivesItsTextForm() throws {
        let hash = try PasswordHash(password: "correct horse", iterations: Self.iterations)
        #expect(hash.matches("correct horse"))
        #expect(!hash.matches("correct horsE"))
        let reread = try PasswordHash(parsing: hash.description)
        #expect(reread == hash && reread.matches("correct horse"))
        let other = try PasswordHash(password: "correct horse", iterations: Self.iterations)
        #expect(other.salt != hash.salt, "each hash gets its own salt")
    }

    @Test func weakOrMalformedHashesAreRefused() {
        #expect(throws: PasswordHashError.tooFewIterations(1000)) { try PasswordHash(password: "x", iterations: 1000) }
        for text in ["", "md5$1$aa$bb", "pbkdf2-sha256$abc$00$00", "pbkdf2-sha256$1000$0011223344556677$" + String(repeating: "00", count: 32),
                     "pbkdf2-sha256$200000$00112233445566$" + String(repeating: "00", count: 32), "pbkdf2-sha256$200000$0011223344556677$00"] {
            #expect(throws: PasswordHashError.self, "\(text)") { try PasswordHash(parsing: text) }
        }
    }

    @Test func theUsersFileIsReadWrittenAndNamesItsBadLines() throws {
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "a", iterations: Self.iterations))
        database.set("bob", hash: try PasswordHash(password: "b", iterations: Self.iterations))
        let path = NSTemporaryDirectory() + "users-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try database.write(to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let loaded = try UserDatabase.load(path: path)
        #expect(loaded.verify(login: "alice", password: "a"))
        #expect(!loaded.verify(login: "alice", password: "b"))
        #expect(!loaded.verify(login: "mallory", password: "a"))
        #expect(throws: UserDatabaseError.malformedLine(path: "users file", line: 3, reason: "expected LOGIN:HASH")) {
            try UserDatabase(parsing: "# comment\n\nno colon here\n")
        }
    }

    @Test func failuresFromOneSourceAreRateLimitedForAWindow() {
        let limiter = LoginRateLimiter(maximumFailures: 3, window: .seconds(60))
        let start = NIODeadline.now()
        for second in 0..<3 {
            #expect(limiter.allows("192.0.2.1", now: start + .seconds(Int64(second))))
            limiter.recordFailure("192.0.2.1", now: start + .seconds(Int64(second)))
        }
        #expect(!limiter.allows("192.0.2.1", now: start + .seconds(10)))
        #expect(limiter.allows("192.0.2.2", now: start + .seconds(10)), "other sources are not affected")
        #expect(limiter.allows("192.0.2.1", now: start + .seconds(63)), "the window passes")
    }

    // MARK: End to end

    @Test func aFloodWhileThePasswordIsCheckedIsRefusedAndCountedOnce() async throws {
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "right", iterations: Self.iterations))
        let registry = PrometheusCollectorRegistry()
        let metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let checker = PasswordChecker()
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: database, checker: checker)
            settings.metrics = metrics
        }
        let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group)
        // More messages than the gate holds while the (wrong) password is being checked.
        let flood = Array(repeating: TunnelMessage.fetchConfiguration(identifier: 0), count: PendingLoginMessages.maximumCount + 1)
        try await peer.send([.authenticate(login: "alice", password: "wrong")] + flood)
        #expect(await peer.next() == .authenticateResult(.refused))
        #expect(await peer.waitForClose())
        // Once the hash has finished and its answer reached the closed tunnel's gate, that failure
        // must not refuse (and count) the login again.
        #expect(await AdmissionPeers.eventually { checker.checksFinished == 1 })
        #expect(checker.checksStarted == 1)
        let text = registry.emitToString()
        #expect(MetricsEndpointTests.value("simpletunnel_authentication_failures_total", in: text) == 1, "\(text)")
        await fixture.stop()
    }

    static func server(users: [String: String], maximumFailures: Int = 5) async throws -> (RawServerFixture, SelfSignedIdentity) {
        var database = UserDatabase()
        for (login, password) in users {
            database.set(login, hash: try PasswordHash(password: password, iterations: iterations))
        }
        let identity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "auth-\(UUID().uuidString)")
        // Made first: a TLS set-up that fails must fail the test, not serve it in plaintext.
        let tls = try TLSContext(configuration: identity.serverConfiguration())
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: database, limiter: LoginRateLimiter(maximumFailures: maximumFailures))
            settings.tls = tls
        }
        return (fixture, identity)
    }

    static func connect(_ fixture: RawServerFixture, _ identity: SelfSignedIdentity, login: String?, password: String) async throws -> TunnelClientConnection {
        var settings = TunnelClientConnection.Settings(
            host: "127.0.0.1", port: fixture.port,
            tls: try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint]))))
        settings.credentials = login.map { ($0, password) }
        return try await TunnelClientConnection.connect(settings: settings, group: fixture.group, logger: TunnelFixture.logger)
    }

    @Test func theRightPasswordOpensTheTunnelAndAWrongOneIsRefused() async throws {
        let (fixture, identity) = try await Self.server(users: ["alice": "wonderland"])
        let tunnel = try await Self.connect(fixture, identity, login: "alice", password: "wonderland")
        #expect(try await tunnel.fetchConfiguration() == [:])
        await tunnel.close()
        await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await Self.connect(fixture, identity, login: "alice", password: "looking glass")
        }
        await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await Self.connect(fixture, identity, login: "mallory", password: "wonderland")
        }
        // Without a login the server ends the tunnel at the first other message.
        await #expect(throws: TunnelClosedError.self) {
            _ = try await Self.connect(fixture, identity, login: nil, password: "")
        }
        await fixture.stop()
    }

    @Test func repeatedFailuresFromOneAddressAreRateLimited() async throws {
        let (fixture, identity) = try await Self.server(users: ["alice": "wonderland"], maximumFailures: 2)
        for _ in 0..<2 {
            await #expect(throws: TunnelLoginRefusedError.self) {
                _ = try await Self.connect(fixture, identity, login: "alice", password: "guess")
            }
        }
        // Now even the right password is refused from this address, for the window.
        let locked = await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await Self.connect(fixture, identity, login: "alice", password: "wonderland")
        }
        // The refusal carries no reason on the wire: the client names the lock-out as a possibility.
        #expect(locked?.description.contains("too many failed attempts from this address") == true, "\(String(describing: locked))")
        await fixture.stop()
    }

    @Test func thePasswdCommandWritesAnEntryTheServerAccepts() async throws {
        let path = NSTemporaryDirectory() + "passwd-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let passwd = try await ExternalProcess.run(
            BuiltPrograms.tunnelServer, ["passwd", "carol", "--users", path, "--iterations", "100000"],
            input: Array("s3cret with spaces\n".utf8)
        )
        #expect(passwd.status == 0, "\(String(decoding: passwd.errors, as: UTF8.self))")
        let database = try UserDatabase.load(path: path)
        #expect(database.verify(login: "carol", password: "s3cret with spaces"))
    }
}
