import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices

/// Random sequences of everything that can happen to one TCP flow, on either
/// side, against what must always hold: no byte is lost or sent twice in
/// either direction, each direction is closed towards the peer at most once
/// and nothing follows a full close, and the derived answers agree with the state.
@Suite("A flow's state under random events")
struct FlowStatePropertyTests {
    static let limits = FlowState.Limits(earlyDataAllowance: 4096, queue: Watermark(high: 8192, low: 2048))

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
                switch flow.receiveData(ByteBuffer(repeating: 1, count: size), now: .now()) {
                case .deliver: ledger.deliveredLocally += size
                case .keptUntilOpen: ledger.heldEarly += size
                case .drop, .tooMuchEarlyData: ledger.droppedFromPeer += size
                }
            case 1:
                if flow.readLocal(ByteBuffer(repeating: 2, count: size), from: nil, now: .now()) { ledger.readLocally += size }
            case 2:
                while let item = flow.nextToSend(maximumChunk: max(1, size)) {
                    #expect(!ledger.closesSent.contains(.all), "something was sent after a full close")
                    switch item {
                    case .data(let data, _): ledger.sentToPeer += data.readableBytes
                    case .close(let direction):
                        #expect(!ledger.closesSent.contains(direction), "close \(direction) sent twice")
                        ledger.closesSent.append(direction)
                    case .packets: Issue.record("a TCP flow sent packets")
                    }
                }
            case 3:
                let before = flow.queue.bufferedBytes
                _ = flow.peerClosed([.none, .read, .write, .all][size % 4])
                ledger.discarded += before - flow.queue.bufferedBytes
                if case .cancelled = flow.phase {
                    // The peer gave the flow up before it opened: what it sent early goes nowhere.
                    ledger.droppedFromPeer += ledger.heldEarly
                    ledger.heldEarly = 0
                }
            case 4:
                _ = flow.localReadEnded()
            case 5:
                _ = flow.localClosed()
            case 6:
                flow.peerSuspended(size % 2 == 0)
            case 7:
                _ = flow.localWritabilityChanged(size % 2 == 0)
            default:
                if server {
                    guard case .opening = flow.phase else { break }
                    if case .opened(let early, _) = flow.openSucceeded() {
                        let bytes = early.reduce(0) { $0 + $1.readableBytes }
                        #expect(bytes == ledger.heldEarly, "the early data written at open is what was held")
                        ledger.deliveredLocally += bytes
                        ledger.heldEarly = 0
                    }
                } else if flow.isAwaitingOpenResult {
                    let opened = flow.openResultSucceeded()
                    #expect(opened)
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
