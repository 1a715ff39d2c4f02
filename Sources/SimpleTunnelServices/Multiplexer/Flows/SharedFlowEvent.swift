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

    func apply<Machine: FlowMachine>(to flow: inout Machine) -> Machine.Action {
        switch self {
        case .peerSuspended(let suspended): flow.peerSuspended(suspended)
        case .peerClosed(let direction): flow.peerClosed(direction)
        case .openFailed(let failure): flow.openFailed(failure)
        case .openSucceeded(let configuration): flow.openSucceeded(configuration: configuration)
        case .openResultReceived(let result, let configuration, let detail):
            flow.openResultReceived(result, configuration: configuration, detail: detail)
        }
    }
}

/// What both flow machines answer, each with its own action type.
protocol FlowMachine {
    associatedtype Action
    mutating func peerSuspended(_ suspended: Bool) -> Action
    mutating func peerClosed(_ direction: TunnelConnectionCloseDirection) -> Action
    mutating func openFailed(_ failure: FlowOpenFailure) -> Action
    mutating func openSucceeded(configuration: [String: PropertyListValue]?) -> Action
    mutating func openResultReceived(
        _ result: TunnelConnectionOpenResult, configuration: [String: PropertyListValue]?, detail: TunnelOpenResultDetail?
    ) -> Action
}

extension FlowState: FlowMachine {}
extension IPFlowState: FlowMachine {}

extension TunnelMultiplexer {
    /// Runs `event` on the flow's machine, whichever kind it is: one lookup,
    /// one switch. Returns false when no flow has the identifier.
    @discardableResult
    func deliver(_ event: SharedFlowEvent, to identifier: TunnelConnectionIdentifier) -> Bool {
        guard let index = flows.index(of: identifier) else { return false }
        switch flows.kind(at: index) {
        case .stream?: transition(identifier, at: index) { event.apply(to: &$0) }
        case .ip?: transitionIP(identifier, at: index) { event.apply(to: &$0) }
        case nil: impossible(identifier, .phaseBeingModified)
        }
        return true
    }
}
