import Foundation
import NIOCore
@testable import SimpleTunnelServices

/// Everything that can happen to one flow, as the table names it.
enum FlowEvent: String, CaseIterable {
    case peerData, localData, tunnelRoom, peerSuspend, peerResume, localFull, localDrained
    case peerCloseNone = "peerClose(none)", peerCloseRead = "peerClose(read)", peerCloseWrite = "peerClose(write)", peerCloseAll = "peerClose(all)"
    case localEOF, localClosed, peerReopen, openSucceeded, openFailed
    case openResultSuccess = "openResult(success)", openResultRefused = "openResult(refused)"

    @discardableResult
    func apply(to flow: inout FlowState) -> FlowAction {
        switch self {
        case .peerData: flow.receiveData(ByteBuffer(repeating: 1, count: 10), to: nil, now: .now())
        case .localData: flow.readLocal(ByteBuffer(repeating: 2, count: 10), from: nil, now: .now())
        case .tunnelRoom: flow.nextToSend(maximumChunk: 64 * 1024)
        case .peerSuspend: flow.peerSuspended(true)
        case .peerResume: flow.peerSuspended(false)
        case .localFull: flow.localWritabilityChanged(false)
        case .localDrained: flow.localWritabilityChanged(true)
        case .peerCloseNone: flow.peerClosed(.none)
        case .peerCloseRead: flow.peerClosed(.read)
        case .peerCloseWrite: flow.peerClosed(.write)
        case .peerCloseAll: flow.peerClosed(.all)
        case .localEOF: flow.localReadEnded()
        case .localClosed: flow.localClosed()
        case .peerReopen: flow.peerReopened()
        case .openSucceeded: flow.openSucceeded(configuration: nil)
        case .openFailed: flow.openFailed(FlowOpenFailure(.refused, "table"))
        case .openResultSuccess: flow.openResultReceived(.success, configuration: nil, detail: nil)
        case .openResultRefused: flow.openResultReceived(.refused, configuration: nil, detail: nil)
        }
    }
}

extension FlowAction {
    /// The action's case, with what tells its variants apart.
    var name: String {
        switch self {
        case .none: "none"
        case .writeLocal: "writeLocal"
        case .drop: "drop"
        case .dropLocalRead: "dropLocalRead"
        case .send(.data): "send(data)"
        case .send(.close(let direction)): "send(close(\(direction)))"
        case .suspendPeer: "suspendPeer"
        case .resumePeer: "resumePeer"
        case .shutdownLocalOutput: "shutdownLocalOutput"
        case .confirmOpen(_, _, let shutdown): shutdown ? "confirmOpen(shutdown)" : "confirmOpen"
        case .endFailedOpen(let answer): answer == nil ? "endFailedOpen" : "endFailedOpen(answer)"
        case .refuseDuplicateOpen: "refuseDuplicateOpen"
        case .completeOpen(_, let shutdown): shutdown ? "completeOpen(shutdown)" : "completeOpen"
        case .failPendingOpen: "failPendingOpen"
        case .forget(let aborting): aborting ? "forget(aborting)" : "forget"
        case .forgetForNewOpen: "forgetForNewOpen"
        case .peerFault: "peerFault"
        case .impossible: "impossible"
        }
    }

    /// Whether the multiplexer forgets the flow when it performs this.
    var forgetsFlow: Bool {
        switch self {
        case .endFailedOpen, .failPendingOpen, .forget, .forgetForNewOpen, .peerFault, .impossible: true
        default: false
        }
    }
}

extension FlowState.Streams {
    var name: String {
        switch self {
        case .both: "both"
        case .sending: "sending"
        case .receiving: "receiving"
        default: "none"
        }
    }
}

extension FlowState {
    /// The state as the table names it: the phase and the streams it carries.
    var label: String {
        if isDone { return "done" }
        switch phase {
        case .opening(_, _, let running): return "opening(\(running.name))"
        case .awaitingOpenResult(let running): return "awaiting(\(running.name))"
        case .open(let running): return "open(\(running.name))"
        case .cancelled: return "cancelled"
        case .modifying: return "modifying"
        }
    }
}

/// Every state a flow can be in, how to reach it, and what each event does there.
enum FlowStateTable {
    static let limits = FlowState.Limits(earlyDataAllowance: 4096, queue: Watermark(high: 8192, low: 2048))

    /// Each state, with the events that lead to it from a server's (`opening`) or a client's first state.
    static let states: [(label: String, server: Bool, path: [FlowEvent])] = [
        ("opening(both)", true, []),
        ("opening(sending)", true, [.peerCloseWrite]),
        ("opening(receiving)", true, [.peerCloseRead]),
        ("opening(none)", true, [.peerCloseWrite, .localEOF]),
        ("cancelled", true, [.peerCloseAll]),
        ("awaiting(both)", false, []),
        ("awaiting(sending)", false, [.peerCloseWrite]),
        ("awaiting(receiving)", false, [.localEOF]),
        ("awaiting(none)", false, [.localEOF, .peerCloseWrite]),
        ("open(both)", false, [.openResultSuccess]),
        ("open(sending)", false, [.openResultSuccess, .peerCloseWrite]),
        ("open(receiving)", false, [.openResultSuccess, .localEOF, .tunnelRoom]),
        ("open(none)", false, [.openResultSuccess, .localEOF, .peerCloseWrite]),
    ]

    /// Where the flow ends up after what leaves the table's states.
    static let ends = ["done", "forgotten"]

    static func initial(server: Bool) -> FlowState {
        server ? .opening(.tcp, limits: limits, now: .now()) : .awaitingOpenResult(.tcp, limits: limits, now: .now())
    }

    struct Row: Equatable {
        var state: String
        var event: String
        /// The state after, "forgotten" when the action forgets the flow, or "trap": our own mistake, which
        /// the machine answers with `.impossible` and a debug build's multiplexer traps on.
        var next: String
        var action: String
    }

    /// state, event, next state, action: one row per pair, as `rows` parses it.
    static let text = """
        opening(both)         peerData              opening(both)         none
        opening(both)         localData             opening(both)         dropLocalRead
        opening(both)         tunnelRoom            opening(both)         none
        opening(both)         peerSuspend           opening(both)         none
        opening(both)         peerResume            opening(both)         none
        opening(both)         localFull             opening(both)         none
        opening(both)         localDrained          opening(both)         none
        opening(both)         peerClose(none)       opening(both)         none
        opening(both)         peerClose(read)       opening(receiving)    none
        opening(both)         peerClose(write)      opening(sending)      none
        opening(both)         peerClose(all)        cancelled             none
        opening(both)         localEOF              opening(receiving)    none
        opening(both)         localClosed           opening(both)         none
        opening(both)         peerReopen            opening(both)         refuseDuplicateOpen
        opening(both)         openSucceeded         open(both)            confirmOpen
        opening(both)         openFailed            forgotten             endFailedOpen(answer)
        opening(both)         openResult(success)   trap
        opening(both)         openResult(refused)   trap
        opening(sending)      peerData              opening(sending)      drop
        opening(sending)      localData             opening(sending)      dropLocalRead
        opening(sending)      tunnelRoom            opening(sending)      none
        opening(sending)      peerSuspend           opening(sending)      none
        opening(sending)      peerResume            opening(sending)      none
        opening(sending)      localFull             opening(sending)      none
        opening(sending)      localDrained          opening(sending)      none
        opening(sending)      peerClose(none)       opening(sending)      none
        opening(sending)      peerClose(read)       cancelled             none
        opening(sending)      peerClose(write)      opening(sending)      none
        opening(sending)      peerClose(all)        cancelled             none
        opening(sending)      localEOF              opening(none)         none
        opening(sending)      localClosed           opening(sending)      none
        opening(sending)      peerReopen            opening(sending)      refuseDuplicateOpen
        opening(sending)      openSucceeded         open(sending)         confirmOpen(shutdown)
        opening(sending)      openFailed            forgotten             endFailedOpen(answer)
        opening(sending)      openResult(success)   trap
        opening(sending)      openResult(refused)   trap
        opening(receiving)    peerData              opening(receiving)    none
        opening(receiving)    localData             opening(receiving)    dropLocalRead
        opening(receiving)    tunnelRoom            opening(receiving)    none
        opening(receiving)    peerSuspend           opening(receiving)    none
        opening(receiving)    peerResume            opening(receiving)    none
        opening(receiving)    localFull             opening(receiving)    none
        opening(receiving)    localDrained          opening(receiving)    none
        opening(receiving)    peerClose(none)       opening(receiving)    none
        opening(receiving)    peerClose(read)       opening(receiving)    none
        opening(receiving)    peerClose(write)      cancelled             none
        opening(receiving)    peerClose(all)        cancelled             none
        opening(receiving)    localEOF              opening(receiving)    none
        opening(receiving)    localClosed           opening(receiving)    none
        opening(receiving)    peerReopen            opening(receiving)    refuseDuplicateOpen
        opening(receiving)    openSucceeded         open(receiving)       confirmOpen
        opening(receiving)    openFailed            forgotten             endFailedOpen(answer)
        opening(receiving)    openResult(success)   trap
        opening(receiving)    openResult(refused)   trap
        opening(none)         peerData              opening(none)         drop
        opening(none)         localData             opening(none)         dropLocalRead
        opening(none)         tunnelRoom            opening(none)         none
        opening(none)         peerSuspend           opening(none)         none
        opening(none)         peerResume            opening(none)         none
        opening(none)         localFull             opening(none)         none
        opening(none)         localDrained          opening(none)         none
        opening(none)         peerClose(none)       opening(none)         none
        opening(none)         peerClose(read)       opening(none)         none
        opening(none)         peerClose(write)      opening(none)         none
        opening(none)         peerClose(all)        cancelled             none
        opening(none)         localEOF              opening(none)         none
        opening(none)         localClosed           opening(none)         none
        opening(none)         peerReopen            opening(none)         refuseDuplicateOpen
        opening(none)         openSucceeded         open(none)            confirmOpen(shutdown)
        opening(none)         openFailed            forgotten             endFailedOpen(answer)
        opening(none)         openResult(success)   trap
        opening(none)         openResult(refused)   trap
        cancelled             peerData              cancelled             drop
        cancelled             localData             cancelled             dropLocalRead
        cancelled             tunnelRoom            cancelled             none
        cancelled             peerSuspend           cancelled             none
        cancelled             peerResume            cancelled             none
        cancelled             localFull             cancelled             none
        cancelled             localDrained          cancelled             none
        cancelled             peerClose(none)       cancelled             none
        cancelled             peerClose(read)       cancelled             none
        cancelled             peerClose(write)      cancelled             none
        cancelled             peerClose(all)        cancelled             none
        cancelled             localEOF              cancelled             none
        cancelled             localClosed           cancelled             none
        cancelled             peerReopen            cancelled             refuseDuplicateOpen
        cancelled             openSucceeded         forgotten             forget(aborting)
        cancelled             openFailed            forgotten             endFailedOpen
        cancelled             openResult(success)   trap
        cancelled             openResult(refused)   trap
        awaiting(both)        peerData              awaiting(both)        drop
        awaiting(both)        localData             awaiting(both)        none
        awaiting(both)        tunnelRoom            awaiting(both)        none
        awaiting(both)        peerSuspend           awaiting(both)        none
        awaiting(both)        peerResume            awaiting(both)        none
        awaiting(both)        localFull             awaiting(both)        none
        awaiting(both)        localDrained          awaiting(both)        none
        awaiting(both)        peerClose(none)       awaiting(both)        none
        awaiting(both)        peerClose(read)       awaiting(receiving)   none
        awaiting(both)        peerClose(write)      awaiting(sending)     none
        awaiting(both)        peerClose(all)        forgotten             failPendingOpen
        awaiting(both)        localEOF              awaiting(receiving)   none
        awaiting(both)        localClosed           forgotten             failPendingOpen
        awaiting(both)        peerReopen            awaiting(both)        refuseDuplicateOpen
        awaiting(both)        openSucceeded         trap
        awaiting(both)        openFailed            trap
        awaiting(both)        openResult(success)   open(both)            completeOpen
        awaiting(both)        openResult(refused)   forgotten             failPendingOpen
        awaiting(sending)     peerData              awaiting(sending)     drop
        awaiting(sending)     localData             awaiting(sending)     none
        awaiting(sending)     tunnelRoom            awaiting(sending)     none
        awaiting(sending)     peerSuspend           awaiting(sending)     none
        awaiting(sending)     peerResume            awaiting(sending)     none
        awaiting(sending)     localFull             awaiting(sending)     none
        awaiting(sending)     localDrained          awaiting(sending)     none
        awaiting(sending)     peerClose(none)       awaiting(sending)     none
        awaiting(sending)     peerClose(read)       forgotten             failPendingOpen
        awaiting(sending)     peerClose(write)      awaiting(sending)     none
        awaiting(sending)     peerClose(all)        forgotten             failPendingOpen
        awaiting(sending)     localEOF              awaiting(none)        none
        awaiting(sending)     localClosed           forgotten             failPendingOpen
        awaiting(sending)     peerReopen            awaiting(sending)     refuseDuplicateOpen
        awaiting(sending)     openSucceeded         trap
        awaiting(sending)     openFailed            trap
        awaiting(sending)     openResult(success)   open(sending)         completeOpen(shutdown)
        awaiting(sending)     openResult(refused)   forgotten             failPendingOpen
        awaiting(receiving)   peerData              awaiting(receiving)   drop
        awaiting(receiving)   localData             awaiting(receiving)   dropLocalRead
        awaiting(receiving)   tunnelRoom            awaiting(receiving)   send(close(write))
        awaiting(receiving)   peerSuspend           awaiting(receiving)   none
        awaiting(receiving)   peerResume            awaiting(receiving)   none
        awaiting(receiving)   localFull             awaiting(receiving)   none
        awaiting(receiving)   localDrained          awaiting(receiving)   none
        awaiting(receiving)   peerClose(none)       awaiting(receiving)   none
        awaiting(receiving)   peerClose(read)       awaiting(receiving)   none
        awaiting(receiving)   peerClose(write)      forgotten             failPendingOpen
        awaiting(receiving)   peerClose(all)        forgotten             failPendingOpen
        awaiting(receiving)   localEOF              awaiting(receiving)   none
        awaiting(receiving)   localClosed           forgotten             failPendingOpen
        awaiting(receiving)   peerReopen            awaiting(receiving)   refuseDuplicateOpen
        awaiting(receiving)   openSucceeded         trap
        awaiting(receiving)   openFailed            trap
        awaiting(receiving)   openResult(success)   open(receiving)       completeOpen
        awaiting(receiving)   openResult(refused)   forgotten             failPendingOpen
        awaiting(none)        peerData              awaiting(none)        drop
        awaiting(none)        localData             awaiting(none)        dropLocalRead
        awaiting(none)        tunnelRoom            awaiting(none)        send(close(write))
        awaiting(none)        peerSuspend           awaiting(none)        none
        awaiting(none)        peerResume            awaiting(none)        none
        awaiting(none)        localFull             awaiting(none)        none
        awaiting(none)        localDrained          awaiting(none)        none
        awaiting(none)        peerClose(none)       awaiting(none)        none
        awaiting(none)        peerClose(read)       awaiting(none)        none
        awaiting(none)        peerClose(write)      awaiting(none)        none
        awaiting(none)        peerClose(all)        forgotten             failPendingOpen
        awaiting(none)        localEOF              awaiting(none)        none
        awaiting(none)        localClosed           forgotten             failPendingOpen
        awaiting(none)        peerReopen            awaiting(none)        refuseDuplicateOpen
        awaiting(none)        openSucceeded         trap
        awaiting(none)        openFailed            trap
        awaiting(none)        openResult(success)   open(none)            completeOpen(shutdown)
        awaiting(none)        openResult(refused)   forgotten             failPendingOpen
        open(both)            peerData              open(both)            writeLocal
        open(both)            localData             open(both)            none
        open(both)            tunnelRoom            open(both)            none
        open(both)            peerSuspend           open(both)            none
        open(both)            peerResume            open(both)            none
        open(both)            localFull             open(both)            suspendPeer
        open(both)            localDrained          open(both)            none
        open(both)            peerClose(none)       open(both)            none
        open(both)            peerClose(read)       open(receiving)       none
        open(both)            peerClose(write)      open(sending)         shutdownLocalOutput
        open(both)            peerClose(all)        forgotten             forget
        open(both)            localEOF              open(receiving)       none
        open(both)            localClosed           open(none)            none
        open(both)            peerReopen            open(both)            refuseDuplicateOpen
        open(both)            openSucceeded         trap
        open(both)            openFailed            trap
        open(both)            openResult(success)   open(both)            none
        open(both)            openResult(refused)   open(both)            none
        open(sending)         peerData              open(sending)         drop
        open(sending)         localData             open(sending)         none
        open(sending)         tunnelRoom            open(sending)         none
        open(sending)         peerSuspend           open(sending)         none
        open(sending)         peerResume            open(sending)         none
        open(sending)         localFull             open(sending)         none
        open(sending)         localDrained          open(sending)         none
        open(sending)         peerClose(none)       open(sending)         none
        open(sending)         peerClose(read)       done                  none
        open(sending)         peerClose(write)      open(sending)         none
        open(sending)         peerClose(all)        forgotten             forget
        open(sending)         localEOF              open(none)            none
        open(sending)         localClosed           open(none)            none
        open(sending)         peerReopen            forgotten             forgetForNewOpen
        open(sending)         openSucceeded         trap
        open(sending)         openFailed            trap
        open(sending)         openResult(success)   open(sending)         none
        open(sending)         openResult(refused)   open(sending)         none
        open(receiving)       peerData              open(receiving)       writeLocal
        open(receiving)       localData             open(receiving)       dropLocalRead
        open(receiving)       tunnelRoom            open(receiving)       none
        open(receiving)       peerSuspend           open(receiving)       none
        open(receiving)       peerResume            open(receiving)       none
        open(receiving)       localFull             open(receiving)       suspendPeer
        open(receiving)       localDrained          open(receiving)       none
        open(receiving)       peerClose(none)       open(receiving)       none
        open(receiving)       peerClose(read)       open(receiving)       none
        open(receiving)       peerClose(write)      done                  shutdownLocalOutput
        open(receiving)       peerClose(all)        forgotten             forget
        open(receiving)       localEOF              open(receiving)       none
        open(receiving)       localClosed           open(none)            none
        open(receiving)       peerReopen            forgotten             forgetForNewOpen
        open(receiving)       openSucceeded         trap
        open(receiving)       openFailed            trap
        open(receiving)       openResult(success)   open(receiving)       none
        open(receiving)       openResult(refused)   open(receiving)       none
        open(none)            peerData              open(none)            drop
        open(none)            localData             open(none)            dropLocalRead
        open(none)            tunnelRoom            done                  send(close(write))
        open(none)            peerSuspend           open(none)            none
        open(none)            peerResume            open(none)            none
        open(none)            localFull             open(none)            none
        open(none)            localDrained          open(none)            none
        open(none)            peerClose(none)       open(none)            none
        open(none)            peerClose(read)       open(none)            none
        open(none)            peerClose(write)      open(none)            none
        open(none)            peerClose(all)        forgotten             forget
        open(none)            localEOF              open(none)            none
        open(none)            localClosed           open(none)            none
        open(none)            peerReopen            forgotten             forgetForNewOpen
        open(none)            openSucceeded         trap
        open(none)            openFailed            trap
        open(none)            openResult(success)   open(none)            none
        open(none)            openResult(refused)   open(none)            none
        """

    static var rows: [Row] {
        text.split(separator: "\n").map { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            return Row(state: fields[0], event: fields[1], next: fields[2], action: fields.count > 3 ? fields[3] : "")
        }
    }


    /// Drives the machine through every pair and writes down what it did.
    static func observed() -> [Row] {
        var rows: [Row] = []
        for state in states {
            for event in FlowEvent.allCases {
                var flow = reach(state.path, server: state.server)
                let action = event.apply(to: &flow)
                if case .impossible = action {
                    rows.append(Row(state: state.label, event: event.rawValue, next: "trap", action: ""))
                    continue
                }
                rows.append(Row(state: state.label, event: event.rawValue, next: action.forgetsFlow ? "forgotten" : flow.label, action: action.name))
            }
        }
        return rows
    }

    static func reach(_ path: [FlowEvent], server: Bool) -> FlowState {
        var flow = initial(server: server)
        for event in path { event.apply(to: &flow) }
        return flow
    }

    static func format(_ rows: [Row]) -> String {
        rows.map { row in
            [row.state, row.event, row.next, row.action].map { $0.padding(toLength: 22, withPad: " ", startingAt: 0) }.joined()
                .trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
