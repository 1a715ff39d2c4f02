import NIOCore

/// Decides which destinations flows may reach (PROTOCOL.md A4: a destination
/// not allowed by policy gets result 3). Judged twice: by name before
/// resolution, and by each address after it, so that a name cannot smuggle a
/// forbidden address past the rules.
public protocol DestinationAuthorizer: Sendable {
    /// Nil when `host:port` may be tried, else why not.
    func refusal(forHost host: String, port: Int) -> String?
    /// Nil when `address` (resolved from `requestedHost`) may be reached, else why not.
    func refusal(forAddress address: SocketAddress, requestedHost: String) -> String?
}

/// Every destination is allowed.
public struct AllowAllDestinations: DestinationAuthorizer {
    public init() {}
    public func refusal(forHost host: String, port: Int) -> String? { nil }
    public func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? { nil }
}
