import Testing
@testable import SimpleTunnelServices

/// What data past `suspend` leads to, as a value (PROTOCOL.md A4, B5): each
/// mutation answers whether it flipped `mayReadPeer`.
@Suite("Suspend allowance")
struct SuspendAllowanceTests {
    @Test func aServerPastTheAllowanceHoldsThePeerUntilTheSocketDrainsAndNeverAborts() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .holdPeer)
        #expect(allowance.suspendSent(7) == .noChange)
        #expect(allowance.charge(7, bytes: 100) == charged(.within, .noChange))
        #expect(allowance.mayReadPeer)
        #expect(allowance.charge(7, bytes: 1) == charged(.holdPeer, .changed(newValue: false)))
        #expect(!allowance.mayReadPeer)
        #expect(allowance.charge(7, bytes: 50) == charged(.holdPeer, .noChange), "what was already read is still kept; the peer was held already")
        #expect(allowance.drained(7) == .changed(newValue: true))
        #expect(allowance.mayReadPeer)
        #expect(allowance.total == 0)
        #expect(allowance.drained(7) == .noChange, "drained twice: nothing was left")
    }

    @Test func drainingAFlowWithinItsAllowanceChangesNothing() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .holdPeer)
        _ = allowance.suspendSent(7)
        #expect(allowance.charge(7, bytes: 60) == charged(.within, .noChange))
        #expect(allowance.drained(7) == .noChange)
        #expect(allowance.total == 0)
    }

    @Test func theTunnelTotalHoldsThePeerToo() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 150, overrun: .holdPeer)
        _ = allowance.suspendSent(1)
        _ = allowance.suspendSent(2)
        #expect(allowance.charge(1, bytes: 90) == charged(.within, .noChange))
        #expect(allowance.charge(2, bytes: 90) == charged(.holdPeer, .changed(newValue: false)))
        #expect(allowance.drained(1) == .changed(newValue: true))
        #expect(allowance.mayReadPeer)
    }

    @Test func aForgottenFlowsBytesCountUntilItsSocketCloses() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 150, overrun: .holdPeer)
        _ = allowance.suspendSent(1)
        _ = allowance.charge(1, bytes: 160)
        let socket = ObjectIdentifier(Sentinel())
        #expect(allowance.flowForgotten(1, closingSocket: socket) == .noChange, "the socket still holds 160 bytes, past the tunnel's 150")
        #expect(!allowance.mayReadPeer)
        #expect(allowance.socketClosed(socket) == .changed(newValue: true))
        #expect(allowance.mayReadPeer)
        #expect(allowance.total == 0)
        #expect(allowance.socketClosed(socket) == .noChange, "a socket closes once")
    }

    @Test func aForgottenFlowWithoutASocketGivesItsBytesBackAtOnce() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .holdPeer)
        _ = allowance.suspendSent(1)
        _ = allowance.charge(1, bytes: 160)
        #expect(allowance.flowForgotten(1, closingSocket: nil) == .changed(newValue: true))
        #expect(allowance.total == 0)
        #expect(allowance.flowForgotten(1, closingSocket: nil) == .noChange)
    }

    @Test func aClientAbortsTheFlowInstead() {
        var allowance = SuspendAllowance(perFlow: 100, perTunnel: 1000, overrun: .abortFlow)
        _ = allowance.suspendSent(3)
        guard case .abortFlow = allowance.charge(3, bytes: 101).verdict else {
            Issue.record("a client closes a flow whose server ignores suspend")
            return
        }
    }

    @Test func dataForAFlowNotSuspendedCostsNothing() {
        var allowance = SuspendAllowance(perFlow: 1, perTunnel: 1, overrun: .holdPeer)
        #expect(allowance.charge(9, bytes: 1 << 30) == charged(.within, .noChange))
        #expect(allowance.total == 0)
    }
}

private final class Sentinel {}

/// A verdict and change typed for comparison with what `charge` returns.
private func charged(_ verdict: SuspendAllowance.Verdict, _ change: OutputChange) -> (SuspendAllowance.Verdict, OutputChange) {
    (verdict, change)
}
