import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Flow state machine")
struct FlowStateTests {
    let limits = TunnelMultiplexer.Limits()

    func openFlow() -> FlowState {
        FlowState(kind: .tcp, phase: .open, now: .now())
    }

    @Test func halfClosesEndTheFlowOnlyWhenBothStreamsHaveEnded() {
        var flow = openFlow()
        let step1 = flow.localReadEnded()
        #expect(step1)
        #expect(!flow.isFinished)
        let step2 = flow.localReadEnded()
        #expect(!step2, "a second EOF changes nothing")
        let step3 = flow.peerClosed(.write)
        #expect(step3 == .shutdownLocalOutput)
        #expect(flow.isFinished)
        let step4 = flow.peerClosed(.write)
        #expect(step4 == .nothing)
    }

    @Test func closeTypeReadStopsSendingAndDropsWhatWasQueued() {
        var flow = openFlow()
        flow.queue.appendData(ByteBuffer(string: "unsent"), source: nil)
        let step5 = flow.peerClosed(.read)
        #expect(step5 == .stopSending)
        #expect(flow.queue.isEmpty)
        #expect(!flow.wantsReading(tunnelWritable: true))
        #expect(!flow.isFinished)
        let step6 = flow.receiveData(ByteBuffer(string: "still flows"), limits: limits, now: .now())
        #expect(step6 == .deliver)
    }

    @Test func closeTypeNoneChangesNothingAndAllEndsBoth() {
        var flow = openFlow()
        let step7 = flow.peerClosed(.none)
        #expect(step7 == .nothing)
        #expect(flow.wantsReading(tunnelWritable: true))
        let step8 = flow.peerClosed(.all)
        #expect(step8 == .closeAll)
        #expect(flow.isFinished)
        let step9 = flow.receiveData(ByteBuffer(string: "late"), limits: limits, now: .now())
        #expect(step9 == .drop)
    }

    @Test func aLostLocalSocketEndsWhatStillRan() {
        var flow = openFlow()
        let step10 = flow.localClosed()
        #expect(step10 == .all)
        var halfDone = openFlow()
        _ = halfDone.peerClosed(.write)
        let step11 = halfDone.localClosed()
        #expect(step11 == .write)
        let step12 = halfDone.localClosed()
        #expect(step12 == nil)
    }

    @Test func suspendIsSentOnceAndTheAllowanceIsCounted() {
        var limits = self.limits
        limits.suspendAllowance = 1024 * 1024
        var flow = openFlow()
        let step13 = flow.localWritabilityChanged(false)
        #expect(step13 == .suspend)
        let step14 = flow.localWritabilityChanged(false)
        #expect(step14 == nil)
        let chunk = ByteBuffer(repeating: 0, count: 256 * 1024)
        for _ in 0..<4 {
            let step15 = flow.receiveData(chunk, limits: limits, now: .now())
            #expect(step15 == .deliver)
        }
        let step16 = flow.receiveData(ByteBuffer(string: "x"), limits: limits, now: .now())
        #expect(step16 == .abusive)
        let step17 = flow.localWritabilityChanged(true)
        #expect(step17 == .resume)
    }

    @Test func earlyDataIsKeptUpToItsAllowance() {
        var flow = FlowState(kind: .tcp, phase: .opening(early: [], earlyBytes: 0), now: .now())
        let step18 = flow.receiveData(ByteBuffer(repeating: 1, count: 200 * 1024), limits: limits, now: .now())
        #expect(step18 == .keptUntilOpen)
        let step19 = flow.receiveData(ByteBuffer(repeating: 1, count: 100 * 1024), limits: limits, now: .now())
        #expect(step19 == .abusive)
        guard case .opening(let early, let bytes) = flow.phase else {
            Issue.record("left the opening phase")
            return
        }
        #expect(early.count == 1 && bytes == 200 * 1024)
    }

    @Test func aFlowClosedBothWaysWhileOpeningIsCancelled() {
        var flow = FlowState(kind: .tcp, phase: .opening(early: [], earlyBytes: 0), now: .now())
        _ = flow.peerClosed(.write)
        guard case .opening = flow.phase else {
            Issue.record("a half-closed opening flow must still open")
            return
        }
        _ = flow.peerClosed(.all)
        guard case .cancelled = flow.phase else {
            Issue.record("expected cancelled, got \(flow.phase)")
            return
        }
    }

    @Test func queueWatermarksPauseAndResumeReading() {
        var flow = openFlow()
        flow.queue.appendData(ByteBuffer(repeating: 0, count: limits.flowQueueHighWatermark), source: nil)
        flow.updateQueueWatermarks(limits: limits)
        #expect(!flow.wantsReading(tunnelWritable: true))
        _ = flow.queue.popFirst(maximumChunk: limits.flowQueueHighWatermark - limits.flowQueueLowWatermark, splittable: true)
        flow.updateQueueWatermarks(limits: limits)
        #expect(flow.wantsReading(tunnelWritable: true))
        #expect(!flow.wantsReading(tunnelWritable: false))
    }
}
