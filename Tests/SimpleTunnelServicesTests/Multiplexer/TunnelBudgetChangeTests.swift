import Testing
@testable import SimpleTunnelServices

/// `TunnelBudgets` as a value: every mutation answers what it changed in
/// "read the peer" and "read the flows", and nothing when neither flipped.
@Suite("Tunnel budget changes")
struct TunnelBudgetChangeTests {
    static func limits() -> TunnelMultiplexer.Limits {
        var limits = TunnelMultiplexer.Limits()
        limits.tunnelBufferBudget = 1000
        limits.tunnelEarlyDataBudget = 1000
        limits.suspendAllowance = 100
        limits.tunnelSuspendAllowance = 1000
        limits.controlBacklogLimit = 3
        return limits
    }

    static func server(_ serverBudget: ServerBufferBudget? = nil) -> TunnelBudgets {
        TunnelBudgets(limits: limits(), server: serverBudget, overrun: .holdPeer)
    }

    static func change(peer: Bool? = nil, flows: Bool? = nil) -> BudgetChange {
        var change = BudgetChange()
        if let peer { change.readPeer = .changed(newValue: peer) }
        if let flows { change.readFlows = .changed(newValue: flows) }
        return change
    }

    @Test func queuedBytesStopTheFlowsAtTheBudgetAndRestartThemAtHalf() {
        var budgets = Self.server()
        #expect(budgets.account(queued: 999, early: 0) == .noChange)
        var reached = Self.change(flows: false)
        reached.reachedTunnelBudget = true
        #expect(budgets.account(queued: 1, early: 0) == reached)
        #expect(!budgets.mayReadLocally)
        #expect(budgets.account(queued: 10, early: 0) == .noChange, "paused already")
        #expect(budgets.account(queued: -410, early: 0) == .noChange, "600 bytes: above the low mark")
        #expect(budgets.account(queued: -100, early: 0) == Self.change(flows: true))
        #expect(budgets.account(queued: 0, early: 0) == .noChange)
        #expect(budgets.wantsPeerReads, "flows' queues never hold the peer")
    }

    @Test func earlyDataHoldsAServersPeerButNotAClients() {
        var server = Self.server()
        #expect(server.account(queued: 0, early: 999) == .noChange)
        #expect(server.account(queued: 0, early: 1) == Self.change(peer: false))
        #expect(server.account(queued: 0, early: -400) == .noChange)
        #expect(server.account(queued: 0, early: -100) == Self.change(peer: true))

        var client = TunnelBudgets(limits: Self.limits(), server: nil, overrun: .abortFlow)
        #expect(client.account(queued: 0, early: 5000) == .noChange)
        #expect(client.controlBacklog(10) == .noChange)
        #expect(client.trafficHold(reading: true) == .noChange)
        #expect(client.wantsPeerReads, "a client never holds its server back")
    }

    @Test func theServersBudgetStopsBothUntilItSaysToGoOn() {
        let serverBudget = ServerBufferBudget(limit: 1000)
        var budgets = Self.server(serverBudget)
        #expect(budgets.account(queued: 500, early: 400) == .noChange)
        var reached = Self.change(peer: false, flows: false)
        reached.reachedServerBudget = true
        #expect(budgets.account(queued: 0, early: 100) == reached)
        #expect(budgets.account(queued: 10, early: 0) == .noChange, "held already: no second wait")
        #expect(budgets.account(queued: -1010, early: 0) == .noChange, "only the server's budget says when to go on")
        #expect(serverBudget.heldBytes == 0)
        #expect(budgets.serverResumed() == Self.change(peer: true, flows: true))
        #expect(budgets.serverResumed() == .noChange)
    }

    @Test func dataPastSuspendHoldsThePeerUntilTheFlowDrains() {
        var budgets = Self.server()
        #expect(budgets.suspendSent(1) == .noChange)
        #expect(budgets.chargeDelivered(1, bytes: 100) == delivered(.within, .noChange))
        #expect(budgets.chargeDelivered(1, bytes: 1) == delivered(.holdPeer, Self.change(peer: false)))
        #expect(budgets.chargeDelivered(1, bytes: 1) == delivered(.holdPeer, .noChange))
        #expect(budgets.chargeDelivered(2, bytes: 5000) == delivered(.within, .noChange), "a flow not suspended costs nothing")
        #expect(budgets.suspendDrained(1) == Self.change(peer: true))
        #expect(budgets.suspendDrained(1) == .noChange)
    }

    @Test func aForgottenFlowHoldsThePeerUntilItsSocketCloses() {
        let serverBudget = ServerBufferBudget(limit: 1 << 20)
        var budgets = Self.server(serverBudget)
        let socket = ObjectIdentifier(Sentinel())
        _ = budgets.suspendSent(1)
        _ = budgets.chargeDelivered(1, bytes: 1001)
        #expect(serverBudget.heldBytes == 1001, "data past suspend is charged to the server too")
        #expect(budgets.flowForgotten(1, closingSocket: socket) == .noChange, "its socket still holds 1001 bytes, past the tunnel's 1000")
        #expect(budgets.socketClosed(socket) == Self.change(peer: true))
        #expect(serverBudget.heldBytes == 0)
        #expect(budgets.socketClosed(socket) == .noChange)

        _ = budgets.suspendSent(2)
        _ = budgets.chargeDelivered(2, bytes: 150)
        #expect(budgets.flowForgotten(2, closingSocket: nil) == Self.change(peer: true))
        #expect(budgets.flowForgotten(2, closingSocket: nil) == .noChange)
    }

    @Test func unansweredControlMessagesAndTrafficHoldsHoldThePeer() {
        var budgets = Self.server()
        #expect(budgets.controlBacklog(2) == .noChange)
        #expect(budgets.controlBacklog(3) == Self.change(peer: false))
        #expect(budgets.controlBacklog(4) == .noChange)
        #expect(budgets.trafficHold(reading: true) == .noChange, "held already by the backlog")
        #expect(budgets.controlBacklog(0) == .noChange, "the traffic hold still holds it")
        #expect(budgets.trafficHold(reading: false) == Self.change(peer: true))
        #expect(budgets.trafficHold(reading: true) == Self.change(peer: false))
        #expect(budgets.trafficHold(reading: true) == .noChange)
        #expect(budgets.mayReadLocally, "neither holds the flows")
    }

    @Test func closingGivesBackWhatTheTunnelChargedTheServer() {
        let serverBudget = ServerBufferBudget(limit: 1 << 20)
        var budgets = Self.server(serverBudget)
        _ = budgets.account(queued: 300, early: 200)
        #expect(serverBudget.heldBytes == 500)
        #expect(budgets.tunnelClosed() == .noChange)
        #expect(serverBudget.heldBytes == 0)
        #expect(budgets.chargedToServer == 0)
    }

    @Test func outputChangeComparesBeforeAndAfter() {
        #expect(OutputChange(from: true, to: true) == .noChange)
        #expect(OutputChange(from: false, to: false) == .noChange)
        #expect(OutputChange(from: true, to: false) == .changed(newValue: false))
        #expect(OutputChange(from: false, to: true) == .changed(newValue: true))
    }
}

private final class Sentinel {}

/// A verdict and change typed for comparison with what `chargeDelivered` returns.
private func delivered(_ verdict: SuspendAllowance.Verdict, _ change: BudgetChange) -> (SuspendAllowance.Verdict, BudgetChange) {
    (verdict, change)
}
