import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Login floods", .timeLimit(.minutes(2)))
struct LoginFloodTests {
    static func server(
        iterations: Int = PasswordHash.minimumIterations, maximumFailures: Int = 5, checks: PasswordCheckLimits = PasswordCheckLimits(),
        threadPool: NIOThreadPool = .singleton
    ) async throws -> (RawServerFixture, PasswordChecker) {
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "wonderland", iterations: iterations))
        let checker = PasswordChecker(limits: checks, threadPool: threadPool)
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: database, limiter: LoginRateLimiter(maximumFailures: maximumFailures), checker: checker)
            // Only the login budgets are under test here.
            settings.startupsPerAddress = 1000
        }
        return (fixture, checker)
    }

    /// A raw peer whose first message, sent as soon as it is connected, is alice's login with `password`.
    static func login(_ fixture: RawServerFixture, password: String, from source: String = "127.0.0.1") async throws -> RawTunnelPeer {
        try await RawTunnelPeer.connect(
            port: fixture.port, group: fixture.group, sending: .authenticate(login: "alice", password: password), from: source)
    }

    @Test func parallelGuessesFromOneAddressGetOnlyTheirAttemptsCheckedAndARealLoginGetsThrough() async throws {
        let (fixture, checker) = try await Self.server(maximumFailures: 5)
        var guesses: [RawTunnelPeer] = []
        for index in 0..<60 {
            guesses.append(try await Self.login(fixture, password: "guess \(index)", from: "127.0.0.2"))
        }
        for guess in guesses {
            // Refused, or (when too many of this address's logins were being checked) closed unanswered.
            let answer = await guess.next()
            #expect(answer == nil || answer == .authenticateResult(.refused), "\(String(describing: answer))")
            #expect(await guess.waitForClose())
        }
        #expect(checker.checksStarted <= 5, "\(checker.checksStarted) guesses were checked")
        let real = try await Self.login(fixture, password: "wonderland")
        #expect(await real.next() == .authenticateResult(.success))
        await real.close()
        await fixture.stop()
    }

    @Test func theSocketIsNotReadWhileThePasswordIsChecked() async throws {
        // The checker's one thread is held by a gate until the data below has
        // arrived and had time to be read: the check lasts as long as the test
        // says, not as long as a hash happens to take on this machine.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait() }
        let (fixture, checker) = try await Self.server(threadPool: pool)
        let peer = try await Self.login(fixture, password: "wonderland")
        #expect(await AdmissionPeers.eventually { checker.checksStarted == 1 })
        // Far more than may be held before the answer: read now, it would end the tunnel.
        try await peer.sendData(LoopbackPeers.payload(4 * PendingLoginMessages.maximumBytes), for: 1)
        // A server that read it would end the tunnel now; it must still be open.
        let endedWhileChecking = await peer.waitForClose(timeout: .seconds(2))
        gate.signal()
        #expect(!endedWhileChecking, "the tunnel ended while its password was checked: its socket was read")
        #expect(await peer.next(timeout: .seconds(60)) == .authenticateResult(.success))
        try await peer.send(.fetchConfiguration(identifier: 0))
        let reply = await peer.next { if case .fetchConfiguration = $0 { return false } else { return true } }
        #expect(reply != nil, "the tunnel did not carry on after the login")
        await peer.close()
        await fixture.stop()
        try await pool.shutdownGracefully()
    }

    @Test func aLoginTheServerIsTooBusyToCheckIsClosedUnansweredSoTheClientTriesAgain() async throws {
        var checks = PasswordCheckLimits()
        checks.perSource = 1
        // The checker's one thread is held by a gate, so the first login holds this address's one
        // place until the second has been turned away: an event, not a hash slow enough to outlast it.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait() }
        let (fixture, checker) = try await Self.server(checks: checks, threadPool: pool)
        let first = try await Self.login(fixture, password: "wonderland")
        #expect(await AdmissionPeers.eventually { checker.checksStarted == 1 })
        let second = try await Self.login(fixture, password: "wonderland")
        // Closed with nothing received (the inbox counts as closed only once empty).
        let turnedAway = await second.waitForClose(timeout: .seconds(30))
        gate.signal()
        #expect(turnedAway, "a busy server answered the login, or kept it")
        #expect(await first.next(timeout: .seconds(60)) == .authenticateResult(.success))
        #expect(checker.checksStarted == 1)
        await first.close()
        await fixture.stop()
        try await pool.shutdownGracefully()
    }

    @Test func anOversizedPasswordIsRefusedUnchecked() async throws {
        let (fixture, checker) = try await Self.server()
        let password = String(repeating: "x", count: TunnelAuthenticationGate.maximumPasswordBytes + 1)
        let peer = try await Self.login(fixture, password: password)
        #expect(await peer.next() == .authenticateResult(.refused))
        #expect(await peer.waitForClose())
        #expect(checker.checksStarted == 0)
        await fixture.stop()
    }

    @Test func checksBeyondTheConcurrentCapWaitAndAllAreAnswered() async throws {
        var checks = PasswordCheckLimits()
        checks.concurrent = 1
        let (fixture, checker) = try await Self.server(checks: checks)
        var peers: [RawTunnelPeer] = []
        for index in 0..<4 {
            peers.append(try await Self.login(fixture, password: "wonderland", from: "127.0.0.\(index + 2)"))
        }
        for peer in peers {
            #expect(await peer.next(timeout: .seconds(60)) == .authenticateResult(.success))
            await peer.close()
        }
        #expect(checker.checksStarted == 4)
        await fixture.stop()
    }
}
