/// An event both flow machines take (`FlowState` for TCP and UDP flows,
/// `IPFlowState` for IP flows), so the multiplexer says it once and
/// `TunnelMultiplexer.deliver` runs it on the machine of the flow's kind.
enum SharedFlowEvent {
    /// The peer sent `suspend` (true) or `resume` (false).
    case peerSuspended(Bool)
    case peerClosed(TunnelConnectionCloseDirection)
    /// Server: the local end could not be opened.
    case openFailed(FlowOpenFailure)
    /// Server: the local end is open.
    case openSucceeded(configuration: [String: PropertyListValue]?)
    /// Client: the server answered our `open`.
    case openResultReceived(TunnelConnectionOpenResult, configuration: [String: PropertyListValue]?, detail: TunnelOpenResultDetail?)
}

/// The methods both flow machines answer the shared events with, so one
/// `take` serves both; each machine keeps its own action type.
protocol SharedFlowMachine {
    associatedtype Action
    mutating func peerSuspended(_ suspended: Bool) -> Action
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> Action
    mutating func openFailed(_ failure: FlowOpenFailure) -> Action
    mutating func openSucceeded(configuration: [String: PropertyListValue]?) -> Action
    mutating func openResultReceived(
        _ result: TunnelConnectionOpenResult,
        configuration: [String: PropertyListValue]?,
        detail: TunnelOpenResultDetail?
    ) -> Action
}

extension SharedFlowMachine {
    /// The shared event, by the method this machine answers it with.
    @inline(__always)
    mutating func take(_ event: SharedFlowEvent) -> Action {
        switch event {
        case .peerSuspended(let suspended): peerSuspended(suspended)
        case .peerClosed(let direction): peerClosed(direction)
        case .openFailed(let failure): openFailed(failure)
        case .openSucceeded(let configuration): openSucceeded(configuration: configuration)
        case .openResultReceived(let result, let configuration, let detail):
            openResultReceived(result, configuration: configuration, detail: detail)
        }
    }
}

extension FlowState: SharedFlowMachine {}
extension IPFlowState: SharedFlowMachine {}

extension TunnelMultiplexer {
    /// Runs `event` on the flow's machine, whichever kind it is: one lookup,
    /// one switch. Returns false when no flow has the identifier.
    @discardableResult
    func deliver(_ event: SharedFlowEvent, to identifier: TunnelConnectionIdentifier) -> Bool {
        guard let (kind, found) = flows.kind(identifier) else { return false }
        switch kind {
        case .stream?: transition(identifier, at: found) { $0.take(event) }
        case .ip?: transitionIP(identifier, at: found) { $0.take(event) }
        case nil: impossible(identifier, .phaseBeingModified)
        }
        return true
    }
}
