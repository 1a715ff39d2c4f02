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

    /// A server's budgets; charging the server's budget shows in every change, so only where asked.
    static func server(chargesServer: Bool = false) -> TunnelBudgets {
        TunnelBudgets(limits: limits(), chargesServer: chargesServer, overrun: .holdPeer)
    }

    static func charge(_ bytes: Int) -> BudgetChange {
        var change = BudgetChange()
        change.serverCharge = bytes
        return change
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

        var client = TunnelBudgets(limits: Self.limits(), chargesServer: false, overrun: .abortFlow)
        #expect(client.account(queued: 0, early: 5000) == .noChange)
        #expect(client.controlBacklog(10) == .noChange)
        #expect(client.trafficHold(reading: true) == .noChange)
        #expect(client.wantsPeerReads, "a client never holds its server back")
    }

    @Test func theServersBudgetStopsBothUntilItSaysToGoOn() {
        var budgets = Self.server(chargesServer: true)
        #expect(budgets.account(queued: 500, early: 400) == Self.charge(900))
        var reached = Self.change(peer: false, flows: false)
        reached.reachedServerBudget = true
        #expect(budgets.serverOverBudget() == reached)
        #expect(budgets.serverOverBudget() == .noChange, "out already: no second wait")
        #expect(budgets.account(queued: -500, early: -400) == Self.charge(-900), "only the server's budget says when to go on")
        #expect(budgets.chargedToServer == 0)
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
        var budgets = Self.server(chargesServer: true)
        let socket = ObjectIdentifier(Sentinel())
        #expect(budgets.suspendSent(1) == .noChange)
        var held = Self.change(peer: false)
        held.serverCharge = 1001
        #expect(budgets.chargeDelivered(1, bytes: 1001) == delivered(.holdPeer, held), "data past suspend is charged to the server too")
        #expect(budgets.flowForgotten(1, closingSocket: socket) == .noChange, "its socket still holds 1001 bytes, past the tunnel's 1000")
        var released = Self.change(peer: true)
        released.serverCharge = -1001
        #expect(budgets.socketClosed(socket) == released)
        #expect(budgets.socketClosed(socket) == .noChange)

        _ = budgets.suspendSent(2)
        held.serverCharge = 150
        #expect(budgets.chargeDelivered(2, bytes: 150) == delivered(.holdPeer, held), "past the flow's 100")
        released.serverCharge = -150
        #expect(budgets.flowForgotten(2, closingSocket: nil) == released)
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
        var budgets = Self.server(chargesServer: true)
        _ = budgets.account(queued: 300, early: 200)
        #expect(budgets.tunnelClosed() == Self.charge(-500))
        #expect(budgets.chargedToServer == 0)
    }

    @Test func outputChangeComparesBeforeAndAfter() {
        #expect(OutputChange(from: true, to: true) == .noChange)
        #expect(OutputChange(from: false, to: false) == .noChange)
        #expect(OutputChange(from: true, to: false) == .changed(newValue: false))
        #expect(OutputChange(from: false, to: true) == .changed(newValue: true))
    }

    @Test func changesInARowAddUp() {
        let pause = Self.change(peer: false, flows: false)
        #expect(pause.then(Self.change(peer: true)) == Self.change(flows: false), "a flip undone is no change")
        #expect(BudgetChange.noChange.then(pause) == pause)
        #expect(pause.then(.noChange) == pause)
        var reached = Self.charge(10)
        reached.reachedServerBudget = true
        var both = pause
        both.reachedServerBudget = true
        both.serverCharge = 15
        #expect(pause.then(Self.charge(5)).then(reached) == both)
    }
}

private final class Sentinel {}

/// A verdict and change typed for comparison with what `chargeDelivered` returns.
private func delivered(_ verdict: SuspendAllowance.Verdict, _ change: BudgetChange) -> (SuspendAllowance.Verdict, BudgetChange) {
    (verdict, change)
}
