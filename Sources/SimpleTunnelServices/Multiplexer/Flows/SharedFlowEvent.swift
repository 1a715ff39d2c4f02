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

extension FlowState {
    /// The shared event, by the method this machine answers it with.
    mutating func take(_ event: SharedFlowEvent) -> FlowAction {
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

extension IPFlowState {
    /// The shared event, by the method this machine answers it with.
    mutating func take(_ event: SharedFlowEvent) -> IPFlowAction {
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
