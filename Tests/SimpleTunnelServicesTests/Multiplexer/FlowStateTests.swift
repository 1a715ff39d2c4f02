import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Flow state machine")
struct FlowStateTests {
    let limits = TunnelMultiplexer.Limits().flowLimits

    func openFlow() -> FlowState {
        var flow = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        #expect(flow.openResultReceived(.success, configuration: nil, detail: nil).name == "completeOpen")
        return flow
    }

    func openingFlow() -> FlowState {
        FlowState.opening(.tcp, limits: limits, now: .now())
    }

    @Test func halfClosesEndTheFlowOnlyWhenBothStreamsHaveEnded() {
        var flow = openFlow()
        #expect(flow.localReadEnded().name == "none")
        #expect(flow.queue.bufferedBytes == 0 && !flow.queue.isEmpty, "close(write) queued")
        #expect(flow.localReadEnded().name == "none")
        #expect(flow.nextToSend(maximumChunk: 1024).name == "send(close(write))")
        #expect(flow.nextToSend(maximumChunk: 1024).name == "none", "a second EOF queued nothing")
        #expect(!flow.isDone, "the peer still sends")
        #expect(flow.peerClosed(.write).name == "shutdownLocalOutput")
        #expect(flow.isDone)
        #expect(flow.peerClosed(.write).name == "none")
    }

    /// Apple's app proxy reuses `flow.hash` identifiers once it has forgotten a
    /// flow, which it does at the first close of either direction.
    @Test func aNewOpenReplacesAFlowOnlyOnceOneOfItsStreamsHasEnded() {
        var opening = openingFlow()
        #expect(opening.peerReopened().name == "refuseDuplicateOpen", "still connecting")
        #expect(opening.peerClosed(.write).name == "none")
        #expect(opening.peerReopened().name == "refuseDuplicateOpen", "still connecting: the open's answer is owed to this flow")
        var live = openFlow()
        #expect(live.peerReopened().name == "refuseDuplicateOpen", "both streams run: a true duplicate")
        #expect(live.localReadEnded().name == "none")
        #expect(live.peerReopened().name == "forgetForNewOpen", "we sent close 3: the sample forgot the flow")
        var closedByPeer = openFlow()
        #expect(closedByPeer.peerClosed(.read).name == "none")
        #expect(closedByPeer.peerReopened().name == "forgetForNewOpen")
    }

    @Test func closeTypeReadStopsSendingAndDropsWhatWasQueued() {
        var flow = openFlow()
        #expect(flow.readLocal(ByteBuffer(string: "unsent"), from: nil, now: .now()).name == "none")
        #expect(flow.peerClosed(.read).name == "none")
        #expect(flow.queue.isEmpty)
        #expect(!flow.wantsReading)
        #expect(flow.readLocal(ByteBuffer(string: "late"), from: nil, now: .now()).name == "dropLocalRead", "nothing more is queued")
        #expect(!flow.isDone)
        #expect(flow.receiveData(ByteBuffer(string: "still flows"), to: nil, now: .now()).name == "writeLocal")
    }

    @Test func closeTypeNoneChangesNothingAndAllEndsBoth() {
        var flow = openFlow()
        #expect(flow.peerClosed(.none).name == "none")
        #expect(flow.wantsReading)
        #expect(flow.peerClosed(.all).name == "forget")
        #expect(flow.isDone)
        #expect(flow.receiveData(ByteBuffer(string: "late"), to: nil, now: .now()).name == "drop")
    }

    @Test func aLostLocalSocketEndsWhatStillRan() {
        var flow = openFlow()
        #expect(flow.localClosed().name == "none")
        #expect(flow.nextToSend(maximumChunk: 1024).name == "send(close(all))")
        var halfDone = openFlow()
        #expect(halfDone.peerClosed(.write).name == "shutdownLocalOutput")
        #expect(halfDone.localClosed().name == "none")
        #expect(halfDone.localClosed().name == "none")
        #expect(halfDone.nextToSend(maximumChunk: 1024).name == "send(close(write))")
        #expect(halfDone.nextToSend(maximumChunk: 1024).name == "none", "the second local close queued nothing")
        var waiting = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        #expect(waiting.localClosed().name == "failPendingOpen")
    }

    @Test func suspendAndResumeAreSentOnceEach() {
        var flow = openFlow()
        #expect(flow.localWritabilityChanged(false).name == "suspendPeer")
        #expect(flow.localWritabilityChanged(false).name == "none")
        #expect(flow.localWritabilityChanged(true).name == "resumePeer")
        #expect(flow.localWritabilityChanged(true).name == "none")
    }

    @Test func aSuspendedPeerGetsNothingAndIsNotRead() {
        var flow = openFlow()
        #expect(flow.readLocal(ByteBuffer(string: "held"), from: nil, now: .now()).name == "none")
        #expect(flow.peerSuspended(true).name == "none")
        #expect(!flow.wantsReading)
        #expect(!flow.hasSomethingToSend)
        #expect(flow.nextToSend(maximumChunk: 1024).name == "none")
        #expect(flow.peerSuspended(false).name == "none")
        #expect(flow.hasSomethingToSend)
        #expect(flow.wantsReading)
    }

    @Test func earlyDataIsKeptUpToItsAllowance() {
        var flow = openingFlow()
        #expect(flow.receiveData(ByteBuffer(repeating: 1, count: 200 * 1024), to: nil, now: .now()).name == "none")
        #expect(flow.receiveData(ByteBuffer(repeating: 1, count: 100 * 1024), to: nil, now: .now()).name == "peerFault")
        #expect(flow.earlyDataBytes == 200 * 1024)
        guard case .confirmOpen(let early, _, let shutdown) = flow.openSucceeded(configuration: nil) else {
            Issue.record("expected the flow to open")
            return
        }
        #expect(early.count == 1 && !shutdown)
        #expect(flow.earlyDataBytes == 0)
    }

    @Test func aFlowClosedBothWaysWhileOpeningIsCancelled() {
        var flow = openingFlow()
        #expect(flow.peerClosed(.write).name == "none", "deferred until the open completes")
        var failing = flow
        #expect(failing.openFailed(FlowOpenFailure(.refused, "test")).name == "endFailedOpen(answer)", "a half-closed opening flow is still answered")
        #expect(flow.peerClosed(.all).name == "none")
        guard case .cancelled = flow.phase else {
            Issue.record("expected cancelled")
            return
        }
        failing = flow
        #expect(failing.openFailed(FlowOpenFailure(.refused, "test")).name == "endFailedOpen", "the peer waits for no answer")
        #expect(flow.openSucceeded(configuration: nil).name == "forget(aborting)")
    }

    @Test func aHalfClosedOpeningFlowShutsItsSocketWhenItOpens() {
        var flow = openingFlow()
        #expect(flow.peerClosed(.write).name == "none")
        guard case .confirmOpen(_, _, let shutdown) = flow.openSucceeded(configuration: nil) else {
            Issue.record("expected the flow to open")
            return
        }
        #expect(shutdown)
    }

    @Test func queueWatermarksPauseAndResumeReading() {
        var flow = openFlow()
        #expect(flow.readLocal(ByteBuffer(repeating: 0, count: limits.queue.high), from: nil, now: .now()).name == "none")
        #expect(!flow.wantsReading)
        #expect(flow.nextToSend(maximumChunk: limits.queue.high - limits.queue.low - 1).name == "send(data)")
        #expect(!flow.wantsReading, "between the marks the flow stays paused")
        #expect(flow.nextToSend(maximumChunk: 1).name == "send(data)")
        #expect(flow.wantsReading)
    }

    @Test func aClientTCPFlowSendsEarlyDataOnlyUpToTheAllowance() {
        var flow = FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        #expect(flow.wantsReading)
        #expect(flow.readLocal(ByteBuffer(repeating: 0, count: limits.earlyDataAllowance + 10), from: nil, now: .now()).name == "none")
        var sent = 0
        while case .send(.data(let data, _)) = flow.nextToSend(maximumChunk: 64 * 1024) {
            sent += data.readableBytes
        }
        #expect(sent == limits.earlyDataAllowance)
        #expect(!flow.hasSomethingToSend)
        #expect(flow.openResultReceived(.success, configuration: nil, detail: nil).name == "completeOpen")
        #expect(flow.hasSomethingToSend)
    }

    @Test func aUDPFlowIsNotReadBeforeItOpens() {
        var flow = FlowState.awaitingOpenResult(.udp, limits: limits, now: .now())
        #expect(!flow.wantsReading)
        #expect(flow.openResultReceived(.success, configuration: nil, detail: nil).name == "completeOpen")
        #expect(flow.wantsReading)
    }
}
