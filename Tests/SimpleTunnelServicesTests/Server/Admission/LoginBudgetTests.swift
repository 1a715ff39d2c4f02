import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Login budgets")
struct LoginBudgetTests {
    static let source = ClientAddressGroup(text: "192.0.2.66")

    @Test func checksBeyondTheConcurrentCapWaitTheirTurnInOrder() throws {
        var limits = PasswordCheckLimits()
        limits.concurrent = 2
        limits.perSource = 10
        var queue = PasswordCheckQueue<Int>(limits: limits)
        func submit(_ job: Int) throws -> Int? { try queue.submit(job, from: Self.source) }
        func finish() -> Int? { queue.finish(from: Self.source) }
        #expect(try submit(1) == 1)
        #expect(try submit(2) == 2)
        #expect(try submit(3) == nil, "a third waits")
        #expect(try submit(4) == nil)
        #expect(queue.running == 2 && queue.waitingCount == 2)
        #expect(finish() == 3)
        #expect(finish() == 4)
        #expect(finish() == nil)
        #expect(finish() == nil)
        #expect(queue.running == 0)
    }

    @Test func oneSourceGetsAtMostItsShareOfChecks() throws {
        var limits = PasswordCheckLimits()
        limits.perSource = 2
        var queue = PasswordCheckQueue<Int>(limits: limits)
        func submit(_ job: Int, from source: ClientAddressGroup = Self.source) throws -> Int? { try queue.submit(job, from: source) }
        _ = try submit(1)
        _ = try submit(2)
        #expect(throws: PasswordCheckRefusal.perSource(2)) { try submit(3) }
        #expect(try submit(4, from: ClientAddressGroup(text: "192.0.2.1")) == 4, "others still get theirs")
        _ = queue.finish(from: Self.source)
        #expect(try submit(5) == 5)
    }

    @Test func theWaitingLineIsBounded() throws {
        var limits = PasswordCheckLimits()
        limits.concurrent = 1
        limits.waiting = 2
        var queue = PasswordCheckQueue<Int>(limits: limits)
        for job in 1...3 {
            _ = try queue.submit(job, from: ClientAddressGroup(text: "192.0.2.\(job)"))
        }
        func submitFourth() throws -> Int? { try queue.submit(4, from: ClientAddressGroup(text: "192.0.2.4")) }
        #expect(throws: PasswordCheckRefusal.queueFull(2)) { try submitFourth() }
    }

    @Test func anAttemptCountsFromItsStartAndARightPasswordIsForgiven() {
        let limiter = LoginRateLimiter(maximumFailures: 3, window: .seconds(60))
        let now = NIODeadline.now()
        // Three guesses in parallel: none has failed yet, but all count.
        let attempts = (0..<3).compactMap { _ in limiter.beginAttempt("192.0.2.66", now: now) }
        #expect(attempts.count == 3)
        #expect(limiter.beginAttempt("192.0.2.66", now: now) == nil)
        limiter.succeeded(attempts[0])
        #expect(limiter.beginAttempt("192.0.2.66", now: now) != nil, "a right password gives its attempt back")
        #expect(limiter.beginAttempt("192.0.2.66", now: now + .seconds(61)) != nil, "the window passes")
    }

    @Test func theRateLimiterCountsAnIPv6Slash64AsOneSource() {
        let limiter = LoginRateLimiter(maximumFailures: 2, window: .seconds(60))
        limiter.recordFailure("2001:db8:1:2::1")
        limiter.recordFailure("2001:db8:1:2::2")
        #expect(!limiter.allows("2001:db8:1:2:ffff::9"))
        #expect(limiter.allows("2001:db8:1:3::1"))
    }

    @Test func everyCheckCostsTheLargestIterationCountInTheFile() throws {
        var database = UserDatabase()
        #expect(database.maximumIterations == PasswordHash.defaultIterations, "an empty file: the default")
        database.set("fast", hash: try PasswordHash(password: "a", iterations: PasswordHash.minimumIterations))
        database.set("slow", hash: try PasswordHash(password: "b", iterations: 300_000))
        #expect(database.maximumIterations == 300_000)
        let reread = try UserDatabase(parsing: database.fileText)
        #expect(reread.maximumIterations == 300_000)
        #expect(reread.verify(login: "fast", password: "a") && reread.verify(login: "slow", password: "b"))
        #expect(!reread.verify(login: "nobody", password: "a"))
    }

    @Test func heldMessagesBeforeTheAnswerAreFewAndSmall() {
        var pending = PendingLoginMessages()
        func hold(_ message: TunnelMessage) -> Bool { pending.hold(.message(message)) }
        #expect(hold(.fetchConfiguration(identifier: 0)), "what our client pipelines")
        #expect(!hold(.data(identifier: 1, payload: ByteBuffer(repeating: 0, count: PendingLoginMessages.maximumBytes))))
        #expect(!hold(.fetchConfiguration(identifier: 0, configuration: ["a": 1])), "a client has no configuration to send")
        for _ in 1..<PendingLoginMessages.maximumCount {
            #expect(hold(.resume(identifier: 1)))
        }
        #expect(!hold(.resume(identifier: 1)))
        #expect(pending.messages.count == PendingLoginMessages.maximumCount)
    }
}
