import Foundation
import NIOCore
@testable import SimpleTunnelServices

/// Everything that can happen to an IP flow, as its table names it.
enum IPFlowEvent: String, CaseIterable {
    case peerPackets, localPackets, tunnelRoom, peerSuspend, peerResume
    case peerCloseNone = "peerClose(none)", peerCloseRead = "peerClose(read)", peerCloseWrite = "peerClose(write)", peerCloseAll = "peerClose(all)"
    case peerReopen, openSucceeded, openFailed
    case openResultSuccess = "openResult(success)", openResultRefused = "openResult(refused)"

    @discardableResult
    func apply(to flow: inout IPFlowState) -> IPFlowAction {
        let packets = [TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 20))]
        switch self {
        case .peerPackets: return flow.receivePackets(packets)
        case .localPackets: return flow.readPackets(packets, now: .uptimeNanoseconds(0))
        case .tunnelRoom: return flow.nextToSend(maximumChunk: 64 * 1024, now: .uptimeNanoseconds(0))
        case .peerSuspend: return flow.peerSuspended(true)
        case .peerResume: return flow.peerSuspended(false)
        case .peerCloseNone: return flow.peerClosed(.none)
        case .peerCloseRead: return flow.peerClosed(.read)
        case .peerCloseWrite: return flow.peerClosed(.write)
        case .peerCloseAll: return flow.peerClosed(.all)
        case .peerReopen: return flow.peerReopened()
        case .openSucceeded: return flow.openSucceeded(configuration: nil)
        case .openFailed: return flow.openFailed(FlowOpenFailure(.refused, "table"))
        case .openResultSuccess: return flow.openResultReceived(.success, configuration: nil, detail: nil)
        case .openResultRefused: return flow.openResultReceived(.refused, configuration: nil, detail: nil)
        }
    }
}

extension IPFlowAction {
    var name: String {
        switch self {
        case .none: "none"
        case .dropRead: "dropRead"
        case .dropFromPeer: "dropFromPeer"
        case .writeLocal: "writeLocal"
        case .send: "send(packets)"
        case .dropWaiting: "dropWaiting"
        case .confirmOpen: "confirmOpen"
        case .endFailedOpen(let answer): answer == nil ? "endFailedOpen" : "endFailedOpen(answer)"
        case .refuseDuplicateOpen: "refuseDuplicateOpen"
        case .completeOpen: "completeOpen"
        case .failPendingOpen: "failPendingOpen"
        case .forget: "forget"
        case .impossible: "impossible"
        }
    }

    var forgetsFlow: Bool {
        switch self {
        case .endFailedOpen, .failPendingOpen, .forget, .impossible: true
        default: false
        }
    }
}

extension IPFlowState {
    /// The state as the table names it: the phase, and whether packets wait to go.
    var label: String {
        switch phase {
        case .opening: "opening"
        case .awaitingOpenResult: "awaiting"
        case .cancelled: "cancelled"
        case .open: queue.isEmpty ? "open" : "open(queued)"
        }
    }
}

/// Every state an IP flow can be in, how to reach it, and what each event does there.
enum IPFlowStateTable {
    static let states: [(label: String, server: Bool, path: [IPFlowEvent])] = [
        ("opening", true, []),
        ("cancelled", true, [.peerCloseAll]),
        ("awaiting", false, []),
        ("open", false, [.openResultSuccess]),
        ("open(queued)", false, [.openResultSuccess, .localPackets]),
    ]

    static func reach(_ path: [IPFlowEvent], server: Bool) -> IPFlowState {
        var flow: IPFlowState = server ? .opening(queueLimit: 4096) : .awaitingOpenResult(queueLimit: 4096)
        for event in path { event.apply(to: &flow) }
        return flow
    }

    /// state, event, next state, action.
    static let text = """
        opening               peerPackets           opening               dropFromPeer
        opening               localPackets          opening               dropRead
        opening               tunnelRoom            opening               none
        opening               peerSuspend           opening               none
        opening               peerResume            opening               none
        opening               peerClose(none)       opening               none
        opening               peerClose(read)       cancelled             none
        opening               peerClose(write)      cancelled             none
        opening               peerClose(all)        cancelled             none
        opening               peerReopen            opening               refuseDuplicateOpen
        opening               openSucceeded         open                  confirmOpen
        opening               openFailed            forgotten             endFailedOpen(answer)
        opening               openResult(success)   trap
        opening               openResult(refused)   trap
        cancelled             peerPackets           cancelled             dropFromPeer
        cancelled             localPackets          cancelled             dropRead
        cancelled             tunnelRoom            cancelled             none
        cancelled             peerSuspend           cancelled             none
        cancelled             peerResume            cancelled             none
        cancelled             peerClose(none)       cancelled             none
        cancelled             peerClose(read)       cancelled             none
        cancelled             peerClose(write)      cancelled             none
        cancelled             peerClose(all)        cancelled             none
        cancelled             peerReopen            cancelled             refuseDuplicateOpen
        cancelled             openSucceeded         forgotten             forget
        cancelled             openFailed            forgotten             endFailedOpen
        cancelled             openResult(success)   trap
        cancelled             openResult(refused)   trap
        awaiting              peerPackets           awaiting              dropFromPeer
        awaiting              localPackets          awaiting              dropRead
        awaiting              tunnelRoom            awaiting              none
        awaiting              peerSuspend           awaiting              none
        awaiting              peerResume            awaiting              none
        awaiting              peerClose(none)       awaiting              none
        awaiting              peerClose(read)       forgotten             failPendingOpen
        awaiting              peerClose(write)      forgotten             failPendingOpen
        awaiting              peerClose(all)        forgotten             failPendingOpen
        awaiting              peerReopen            awaiting              refuseDuplicateOpen
        awaiting              openSucceeded         trap
        awaiting              openFailed            trap
        awaiting              openResult(success)   open                  completeOpen
        awaiting              openResult(refused)   forgotten             failPendingOpen
        open                  peerPackets           open                  writeLocal
        open                  localPackets          open(queued)          none
        open                  tunnelRoom            open                  none
        open                  peerSuspend           open                  none
        open                  peerResume            open                  none
        open                  peerClose(none)       open                  none
        open                  peerClose(read)       forgotten             forget
        open                  peerClose(write)      forgotten             forget
        open                  peerClose(all)        forgotten             forget
        open                  peerReopen            open                  refuseDuplicateOpen
        open                  openSucceeded         trap
        open                  openFailed            trap
        open                  openResult(success)   open                  none
        open                  openResult(refused)   open                  none
        open(queued)          peerPackets           open(queued)          writeLocal
        open(queued)          localPackets          open(queued)          none
        open(queued)          tunnelRoom            open                  send(packets)
        open(queued)          peerSuspend           open(queued)          none
        open(queued)          peerResume            open(queued)          none
        open(queued)          peerClose(none)       open(queued)          none
        open(queued)          peerClose(read)       forgotten             forget
        open(queued)          peerClose(write)      forgotten             forget
        open(queued)          peerClose(all)        forgotten             forget
        open(queued)          peerReopen            open(queued)          refuseDuplicateOpen
        open(queued)          openSucceeded         trap
        open(queued)          openFailed            trap
        open(queued)          openResult(success)   open(queued)          none
        open(queued)          openResult(refused)   open(queued)          none
        """

    static var rows: [FlowStateTable.Row] {
        text.split(separator: "\n").map { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            return FlowStateTable.Row(state: fields[0], event: fields[1], next: fields[2], action: fields.count > 3 ? fields[3] : "")
        }
    }

    static func observed() -> [FlowStateTable.Row] {
        var rows: [FlowStateTable.Row] = []
        for state in states {
            for event in IPFlowEvent.allCases {
                var flow = reach(state.path, server: state.server)
                let action = event.apply(to: &flow)
                if case .impossible = action {
                    rows.append(FlowStateTable.Row(state: state.label, event: event.rawValue, next: "trap", action: ""))
                    continue
                }
                rows.append(FlowStateTable.Row(state: state.label, event: event.rawValue, next: action.forgetsFlow ? "forgotten" : flow.label, action: action.name))
            }
        }
        return rows
    }
}
