import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices

/// Random sequences of everything that can happen to one TCP flow, on either
/// side, against what must always hold: no byte is lost or sent twice in
/// either direction, each direction is closed towards the peer at most once
/// and nothing follows a full close, the derived answers agree with the state,
/// and the flow is only ever in a state `FlowStateTable` lists.
@Suite("A flow's state under random events")
struct FlowStatePropertyTests {
    static let limits = FlowStateTable.limits

    /// What the peer and the local socket have seen, to check the flow against.
    struct Ledger {
        var readLocally = 0
        var sentToPeer = 0
        var discarded = 0
        var receivedFromPeer = 0
        var deliveredLocally = 0
        var heldEarly = 0
        var droppedFromPeer = 0
        var closesSent: [TunnelConnectionCloseDirection] = []
    }

    static func run(server: Bool, events: [Int], sizes: [Int]) {
        var flow = server ? FlowState.opening(.tcp, limits: limits, now: .now()) : FlowState.awaitingOpenResult(.tcp, limits: limits, now: .now())
        var ledger = Ledger()
        for (step, event) in events.enumerated() {
            let size = sizes[step % sizes.count]
            switch event {
            case 0:
                ledger.receivedFromPeer += size
                let heldBefore = flow.earlyDataBytes
                switch flow.receiveData(ByteBuffer(repeating: 1, count: size), to: nil, now: .now()) {
                case .writeLocal(let data, _): ledger.deliveredLocally += data.readableBytes
                case .none: ledger.heldEarly += flow.earlyDataBytes - heldBefore
                case .drop, .peerFault: ledger.droppedFromPeer += size
                case let other: Issue.record("data from the peer answered \(other.name)")
                }
            case 1:
                if case .none = flow.readLocal(ByteBuffer(repeating: 2, count: size), from: nil, now: .now()) { ledger.readLocally += size }
            case 2:
                while case .send(let item) = flow.nextToSend(maximumChunk: max(1, size)) {
                    #expect(!ledger.closesSent.contains(.all), "something was sent after a full close")
                    switch item {
                    case .data(let data, _): ledger.sentToPeer += data.readableBytes
                    case .close(let direction):
                        #expect(!ledger.closesSent.contains(direction), "close \(direction) sent twice")
                        ledger.closesSent.append(direction)
                    }
                }
            case 3:
                let before = flow.queue.bufferedBytes
                if case .shutdownLocalOutput = flow.peerClosed([.none, .read, .write, .all][size % 4]) { #expect(!flow.receiving) }
                ledger.discarded += before - flow.queue.bufferedBytes
                if case .cancelled = flow.phase {
                    // The peer gave the flow up before it opened: what it sent early goes nowhere.
                    ledger.droppedFromPeer += ledger.heldEarly
                    ledger.heldEarly = 0
                }
            case 4:
                FlowEvent.localEOF.apply(to: &flow)
            case 5:
                FlowEvent.localClosed.apply(to: &flow)
            case 6:
                (size % 2 == 0 ? FlowEvent.peerSuspend : .peerResume).apply(to: &flow)
            case 7:
                (size % 2 == 0 ? FlowEvent.localFull : .localDrained).apply(to: &flow)
            default:
                if server {
                    guard case .opening = flow.phase else { break }
                    if case .confirmOpen(let early, _, _) = flow.openSucceeded(configuration: nil) {
                        let bytes = early.reduce(0) { $0 + $1.readableBytes }
                        #expect(bytes == ledger.heldEarly, "the early data written at open is what was held")
                        ledger.deliveredLocally += bytes
                        ledger.heldEarly = 0
                    }
                } else if flow.isAwaitingOpenResult {
                    // A stream the peer ended while the open was pending ends on the socket now.
                    let expected = flow.receiving ? "completeOpen" : "completeOpen(shutdown)"
                    #expect(FlowEvent.openResultSuccess.apply(to: &flow).name == expected)
                }
            }
            // Local to peer: every byte read is sent, discarded by the peer's close, or still queued.
            #expect(ledger.readLocally == ledger.sentToPeer + ledger.discarded + flow.queue.bufferedBytes, "step \(step): \(ledger)")
            // Peer to local: every byte is written, held for the open, or dropped as the protocol says.
            #expect(ledger.receivedFromPeer == ledger.deliveredLocally + ledger.heldEarly + ledger.droppedFromPeer, "step \(step)")
            #expect(flow.earlyDataBytes == ledger.heldEarly, "step \(step)")
            if flow.isDone { #expect(flow.queue.isEmpty && !flow.wantsReading && !flow.hasSomethingToSend) }
            if flow.wantsReading { #expect(flow.sending) }
            if flow.hasSomethingToSend { #expect(!flow.peerSuspended && !flow.queue.isEmpty) }
            if case .cancelled = flow.phase { #expect(server && !flow.sending && !flow.receiving) }
            #expect(FlowStateTable.states.contains { $0.label == flow.label } || flow.label == "done", "step \(step): \(flow.label) is not in the table")
        }
    }

    @Test func aServersFlowNeverLosesOrRepeatsAByte() async {
        await propertyCheck(count: 2000, input: Gen<Int>.int(in: 0...8).array(of: 1...60), Gen<Int>.int(in: 0...5000).array(of: 1...8)) {
            events, sizes in
            Self.run(server: true, events: events, sizes: sizes)
        }
    }

    @Test func aClientsFlowNeverLosesOrRepeatsAByte() async {
        await propertyCheck(count: 2000, input: Gen<Int>.int(in: 0...8).array(of: 1...60), Gen<Int>.int(in: 0...5000).array(of: 1...8)) {
            events, sizes in
            Self.run(server: false, events: events, sizes: sizes)
        }
    }
}
