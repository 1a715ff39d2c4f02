import NIOConcurrencyHelpers
import NIOCore

/// The destination rules in force, which a reload replaces: every flow asks
/// it at open, so a rule changed on SIGHUP holds for the next flow of every
/// tunnel, not only of tunnels opened after the reload. Flows already open
/// keep running, as a firewall keeps established connections.
public final class ReloadableAuthorizer: DestinationAuthorizer {
    private let current: NIOLockedValueBox<any DestinationAuthorizer>

    public init(_ authorizer: any DestinationAuthorizer) {
        self.current = NIOLockedValueBox(authorizer)
    }

    public func replace(with authorizer: any DestinationAuthorizer) {
        current.withLockedValue { $0 = authorizer }
    }

    public func refusal(forHost host: String, port: Int) -> String? {
        current.withLockedValue { $0 }.refusal(forHost: host, port: port)
    }

    public func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? {
        current.withLockedValue { $0 }.refusal(forAddress: address, requestedHost: requestedHost)
    }
}
