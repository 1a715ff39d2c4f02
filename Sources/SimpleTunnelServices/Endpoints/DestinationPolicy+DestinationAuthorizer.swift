import NIOCore

/// The flow opener asks a `DestinationAuthorizer`; the configured policy is one.
extension DestinationPolicy: DestinationAuthorizer {
    public func refusal(forHost host: String, port: Int) -> String? {
        decision(forHost: host, port: port).refusalReason
    }

    public func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? {
        decision(for: address, requestedHost: requestedHost).refusalReason
    }
}
