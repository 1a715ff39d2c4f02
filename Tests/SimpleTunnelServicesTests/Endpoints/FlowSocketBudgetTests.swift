import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Flow socket budget: the server's limit and each tunnel's share")
struct FlowSocketBudgetTests {
    @Test func aTunnelPastItsShareIsRefusedWhileAnotherStillGetsSockets() throws {
        let budget = FlowSocketBudget(serverLimit: 5, tunnelShare: 2)
        let first = budget.makeAccount()
        let second = budget.makeAccount()
        let held = try [first.acquire().get(), first.acquire().get()]
        #expect(first.acquire().failure == .tunnelShare(2))
        #expect(first.refusal() == .tunnelShare(2))
        _ = try [second.acquire().get(), second.acquire().get()]
        #expect(budget.socketsInUse == 4)
        held[0].release()
        #expect(first.socketsInUse == 1)
        #expect(throws: Never.self) { try first.acquire().get() }
    }

    @Test func theServerLimitHoldsAcrossTunnels() throws {
        let budget = FlowSocketBudget(serverLimit: 3, tunnelShare: 2)
        let accounts = (0..<3).map { _ in budget.makeAccount() }
        let tickets = try [accounts[0].acquire().get(), accounts[0].acquire().get(), accounts[1].acquire().get()]
        #expect(budget.socketsInUse == 3)
        #expect(accounts[1].acquire().failure == .serverLimit(3))
        #expect(accounts[2].refusal() == .serverLimit(3))
        tickets[0].release()
        #expect(throws: Never.self) { try accounts[2].acquire().get() }
    }

    @Test func aTicketIsReleasedOnceHoweverManyPathsTry() throws {
        let budget = FlowSocketBudget(serverLimit: 4, tunnelShare: 4)
        let account = budget.makeAccount()
        let ticket = try account.acquire().get()
        _ = try account.acquire().get()
        ticket.release()
        ticket.release()
        #expect(budget.socketsInUse == 1)
        #expect(account.socketsInUse == 1)
    }

    @Test func theLimitsFollowTheOpenFileLimit() {
        // 1024 descriptors, 256 tunnels: 128 kept for the server itself.
        #expect(FlowSocketBudget.serverLimit(openFileLimit: 1024, maximumTunnels: 256) == 640)
        #expect(FlowSocketBudget.serverLimit(openFileLimit: 300, maximumTunnels: 256) == 0)
        #expect(FlowSocketBudget.tunnelShare(serverLimit: 640, maximumFlowsPerTunnel: 4096) == 160)
        #expect(FlowSocketBudget.tunnelShare(serverLimit: 1_000_000, maximumFlowsPerTunnel: 4096) == 4096)
        #expect(FlowSocketBudget.tunnelShare(serverLimit: 2, maximumFlowsPerTunnel: 4096) == 1)
        let budget = FlowSocketBudget(openFileLimit: 1024, maximumTunnels: 256, maximumFlowsPerTunnel: 100)
        #expect(budget.serverLimit == 640 && budget.tunnelShare == 100)
        // A share above the server's limit would mean nothing.
        #expect(FlowSocketBudget(serverLimit: 3, tunnelShare: 10).tunnelShare == 3)
    }

    @Test func refusalsAreLoggedOncePerIntervalWithACountOfTheRest() {
        var limiter = LineRateLimiter(interval: .seconds(10))
        let start = NIODeadline.now()
        #expect(limiter.admit(now: start) == 0)
        #expect(limiter.admit(now: start + .seconds(1)) == nil)
        #expect(limiter.admit(now: start + .seconds(9)) == nil)
        #expect(limiter.admit(now: start + .seconds(10)) == 2)
        #expect(limiter.admit(now: start + .seconds(11)) == nil)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
