import NIOConcurrencyHelpers

/// A call on a flow's state that only our own mistake could make (the peer
/// cannot cause one: every peer message that could look like one is checked
/// before it reaches a flow). The state answers with it instead of trapping,
/// so the answer can be tested; the multiplexer traps on it in a debug build,
/// and in a release build closes the flow, logs the first of each kind and
/// counts them all (`simpletunnel_impossible_events_total`).
enum ImpossibleFlowEvent: String, Hashable, Sendable, CaseIterable {
    /// A server's connect finished for a flow that was not connecting.
    case openSucceededWhenNotOpening = "a connect finished for a flow that was not connecting"
    /// A server's connect failed for a flow that was not connecting.
    case openFailedWhenNotOpening = "a connect failed for a flow that was not connecting"
    /// An open result reached a flow the server side opened.
    case openResultForServerFlow = "an open result reached a server's flow"
    /// A local end reported an event its flow's kind does not take (packets
    /// for a TCP or UDP flow, bytes or a socket's close for an IP flow).
    case eventForOtherKind = "a local end reported an event of the other kind of flow"
    /// An event saw a phase that exists only inside another event.
    case phaseBeingModified = "an event saw a flow whose phase was being changed"
}

extension ImpossibleFlowEvent {
    private static let logged = NIOLockedValueBox(Set<ImpossibleFlowEvent>())

    /// Whether this is the first of its kind in this process: only that one is
    /// logged, so a mistake on a hot path cannot flood the log.
    static func isFirstInProcess(_ event: ImpossibleFlowEvent) -> Bool {
        logged.withLockedValue { $0.insert(event).inserted }
    }
}

extension TunnelMultiplexer {
    /// Our own mistake on a flow: a debug build traps; a release build closes
    /// the flow both ways, counts it and logs the first of its kind.
    func impossible(_ identifier: TunnelConnectionIdentifier, _ event: ImpossibleFlowEvent) {
        assertionFailure("\(event.rawValue) (flow \(identifier))")
        counters.metrics?.impossibleEvent()
        if ImpossibleFlowEvent.isFirstInProcess(event) {
            logger.error(
                "internal error: \(event.rawValue); the flow is closed (later ones are only counted, in simpletunnel_impossible_events_total)",
                metadata: ["flow": "\(identifier)"])
        }
        guard flows.contains(identifier) else { return }
        sendControl(.close(identifier: identifier, direction: .all))
        forget(identifier, aborting: true)
    }
}
