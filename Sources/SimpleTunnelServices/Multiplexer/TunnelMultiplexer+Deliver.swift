extension TunnelMultiplexer {
    /// Runs a peer's or an opener's event on the flow's machine, whichever
    /// kind it is: one lookup, one switch on the kind. The caller says what
    /// each machine does with the event (`stream` for a TCP or UDP flow's
    /// `FlowState`, `ip` for an IP flow's `IPFlowState`); each answers with
    /// its own action type, which `transition` or `transitionIP` performs.
    /// Returns false when no flow has the identifier.
    @discardableResult
    func deliver(
        to identifier: TunnelConnectionIdentifier,
        stream: (inout FlowState) -> FlowAction,
        ip: (inout IPFlowState) -> IPFlowAction
    ) -> Bool {
        guard let (kind, found) = flows.kind(identifier) else { return false }
        switch kind {
        case .stream?: transition(identifier, at: found, stream)
        case .ip?: transitionIP(identifier, at: found, ip)
        case nil: impossible(identifier, .phaseBeingModified)
        }
        return true
    }
}
