import Testing
@testable import SimpleTunnelServices

/// What data past `suspend` leads to, as a value (PROTOCOL.md A4, B5).
@Suite("Suspend allowance")
struct SuspendAllowanceTests {
    @Test func aServerPastTheAllowanceHoldsThePeerUntilTheSocketDrainsAndNeverAborts() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .holdPeer)
        allowance.suspendSent(7)
        #expect(allowance.charge(7, bytes: 100) == .within)
        #expect(allowance.mayReadPeer)
        #expect(allowance.charge(7, bytes: 1) == .holdPeer)
        #expect(!allowance.mayReadPeer)
        #expect(allowance.charge(7, bytes: 50) == .holdPeer, "what was already read is still kept")
        allowance.drained(7)
        #expect(allowance.mayReadPeer)
        #expect(allowance.total == 0)
    }

    @Test func theTunnelTotalHoldsThePeerToo() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 150, overrun: .holdPeer)
        allowance.suspendSent(1)
        allowance.suspendSent(2)
        #expect(allowance.charge(1, bytes: 90) == .within)
        #expect(allowance.charge(2, bytes: 90) == .holdPeer)
        allowance.drained(1)
        #expect(allowance.mayReadPeer)
    }

    @Test func aForgottenFlowsBytesCountUntilItsSocketCloses() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 150, overrun: .holdPeer)
        allowance.suspendSent(1)
        _ = allowance.charge(1, bytes: 160)
        let socket = ObjectIdentifier(Sentinel())
        allowance.flowForgotten(1, closingSocket: socket)
        #expect(!allowance.mayReadPeer, "the socket still holds 160 bytes, past the tunnel's 150")
        allowance.socketClosed(socket)
        #expect(allowance.mayReadPeer)
        #expect(allowance.total == 0)
    }

    @Test func aClientAbortsTheFlowInstead() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .abortFlow)
        allowance.suspendSent(3)
        guard case .abortFlow = allowance.charge(3, bytes: 101) else {
            Issue.record("a client closes a flow whose server ignores suspend")
            return
        }
    }

    @Test func dataForAFlowNotSuspendedCostsNothing() {
        var allowance = SuspendAllowance(perFlow: 1, perTunnel: 1, overrun: .holdPeer)
        #expect(allowance.charge(9, bytes: 1 << 30) == .within)
        #expect(allowance.total == 0)
    }
}

private final class Sentinel {}
