import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Flow state machine")
struct FlowStateTests {
    let limits = TunnelMultiplexer.Limits().flowLimits

    func openFlow() -> FlowState {
        var flow = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        _ = flow.openResultSucceeded()
        return flow
    }

    func openingFlow() -> FlowState {
        FlowState.opening(.tcp, limits: limits, now: .now())
    }

    @Test func halfClosesEndTheFlowOnlyWhenBothStreamsHaveEnded() {
        var flow = openFlow()
        let step1 = flow.localReadEnded()
        #expect(step1)
        let step2 = flow.localReadEnded()
        #expect(!step2, "a second EOF changes nothing")
        #expect(!flow.isDone, "the queued close(write) has not gone yet")
        let step3 = flow.nextToSend(maximumChunk: 1024)
        #expect(step3.map { if case .close(.write) = $0 { true } else { false } } == true)
        #expect(!flow.isDone, "the peer still sends")
        let step4 = flow.peerClosed(.write)
        #expect(step4 == .shutdownLocalOutput)
        #expect(flow.isDone)
        let step5 = flow.peerClosed(.write)
        #expect(step5 == .nothing)
    }

    /// Apple's app proxy reuses `flow.hash` identifiers once it has forgotten a
    /// flow, which it does at the first close of either direction.
    @Test func aNewOpenReplacesAFlowOnlyOnceOneOfItsStreamsHasEnded() {
        var opening = openingFlow()
        #expect(opening.reopenVerdict == .refuse, "still connecting")
        _ = opening.peerClosed(.write)
        #expect(opening.reopenVerdict == .refuse, "still connecting: the open's answer is owed to this flow")
        var live = openFlow()
        #expect(live.reopenVerdict == .refuse, "both streams run: a true duplicate")
        _ = live.localReadEnded()
        #expect(live.reopenVerdict == .replace, "we sent close 3: the sample forgot the flow")
        var closedByPeer = openFlow()
        _ = closedByPeer.peerClosed(.read)
        #expect(closedByPeer.reopenVerdict == .replace)
    }

    @Test func closeTypeReadStopsSendingAndDropsWhatWasQueued() {
        var flow = openFlow()
        _ = flow.readLocal(ByteBuffer(string: "unsent"), from: nil, now: .now())
        let step6 = flow.peerClosed(.read)
        #expect(step6 == .stopSending)
        #expect(flow.queue.isEmpty)
        #expect(!flow.wantsReading)
        let step7 = flow.readLocal(ByteBuffer(string: "late"), from: nil, now: .now())
        #expect(!step7, "nothing more is queued")
        #expect(!flow.isDone)
        let step8 = flow.receiveData(ByteBuffer(string: "still flows"), now: .now())
        #expect(step8 == .deliver)
    }

    @Test func closeTypeNoneChangesNothingAndAllEndsBoth() {
        var flow = openFlow()
        let step9 = flow.peerClosed(.none)
        #expect(step9 == .nothing)
        #expect(flow.wantsReading)
        let step10 = flow.peerClosed(.all)
        #expect(step10 == .closeAll)
        #expect(flow.isDone)
        let step11 = flow.receiveData(ByteBuffer(string: "late"), now: .now())
        #expect(step11 == .drop)
    }

    @Test func aLostLocalSocketEndsWhatStillRan() {
        var flow = openFlow()
        let step12 = flow.localClosed()
        #expect(step12 == .queuedClose(.all))
        var halfDone = openFlow()
        _ = halfDone.peerClosed(.write)
        let step13 = halfDone.localClosed()
        #expect(step13 == .queuedClose(.write))
        let step14 = halfDone.localClosed()
        #expect(step14 == .nothing)
        var waiting = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        let step15 = waiting.localClosed()
        #expect(step15 == .failPendingOpen)
    }

    @Test func suspendAndResumeAreSentOnceEach() {
        var flow = openFlow()
        let step16 = flow.localWritabilityChanged(false)
        #expect(step16 == .suspend)
        let step17 = flow.localWritabilityChanged(false)
        #expect(step17 == nil)
        let step18 = flow.localWritabilityChanged(true)
        #expect(step18 == .resume)
        let step19 = flow.localWritabilityChanged(true)
        #expect(step19 == nil)
    }

    @Test func aSuspendedPeerGetsNothingAndIsNotRead() {
        var flow = openFlow()
        _ = flow.readLocal(ByteBuffer(string: "held"), from: nil, now: .now())
        flow.peerSuspended(true)
        #expect(!flow.wantsReading)
        #expect(!flow.hasSomethingToSend)
        let step20 = flow.nextToSend(maximumChunk: 1024)
        #expect(step20 == nil)
        flow.peerSuspended(false)
        #expect(flow.hasSomethingToSend)
        #expect(flow.wantsReading)
    }

    @Test func earlyDataIsKeptUpToItsAllowance() {
        var flow = openingFlow()
        let step21 = flow.receiveData(ByteBuffer(repeating: 1, count: 200 * 1024), now: .now())
        #expect(step21 == .keptUntilOpen)
        let step22 = flow.receiveData(ByteBuffer(repeating: 1, count: 100 * 1024), now: .now())
        #expect(step22 == .tooMuchEarlyData)
        #expect(flow.earlyDataBytes == 200 * 1024)
        guard case .opened(let early, let shutdown) = flow.openSucceeded() else {
            Issue.record("expected the flow to open")
            return
        }
        #expect(early.count == 1 && !shutdown)
        #expect(flow.earlyDataBytes == 0)
    }

    @Test func aFlowClosedBothWaysWhileOpeningIsCancelled() {
        var flow = openingFlow()
        let step23 = flow.peerClosed(.write)
        #expect(step23 == .deferredUntilOpen)
        #expect(flow.openFailedNeedsAnswer(), "a half-closed opening flow must still open")
        let step24 = flow.peerClosed(.all)
        #expect(step24 == .deferredUntilOpen)
        #expect(!flow.openFailedNeedsAnswer())
        guard case .cancelled = flow.openSucceeded() else {
            Issue.record("expected cancelled")
            return
        }
    }

    @Test func aHalfClosedOpeningFlowShutsItsSocketWhenItOpens() {
        var flow = openingFlow()
        _ = flow.peerClosed(.write)
        guard case .opened(_, let shutdown) = flow.openSucceeded() else {
            Issue.record("expected the flow to open")
            return
        }
        #expect(shutdown)
    }

    @Test func queueWatermarksPauseAndResumeReading() {
        var flow = openFlow()
        _ = flow.readLocal(ByteBuffer(repeating: 0, count: limits.queue.high), from: nil, now: .now())
        #expect(!flow.wantsReading)
        _ = flow.nextToSend(maximumChunk: limits.queue.high - limits.queue.low - 1)
        #expect(!flow.wantsReading, "between the marks the flow stays paused")
        _ = flow.nextToSend(maximumChunk: 1)
        #expect(flow.wantsReading)
    }

    @Test func aClientTCPFlowSendsEarlyDataOnlyUpToTheAllowance() {
        var flow = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        #expect(flow.wantsReading)
        _ = flow.readLocal(ByteBuffer(repeating: 0, count: limits.earlyDataAllowance + 10), from: nil, now: .now())
        var sent = 0
        while case .data(let data, _)? = flow.nextToSend(maximumChunk: 64 * 1024) {
            sent += data.readableBytes
        }
        #expect(sent == limits.earlyDataAllowance)
        #expect(!flow.hasSomethingToSend)
        _ = flow.openResultSucceeded()
        #expect(flow.hasSomethingToSend)
    }

    @Test func aUDPFlowIsNotReadBeforeItOpens() {
        var flow = FlowState.awaitingOpenResult(.udp, limits: limits, now: .now())
        #expect(!flow.wantsReading)
        _ = flow.openResultSucceeded()
        #expect(flow.wantsReading)
    }
}
