import Foundation

/// What one login may do, from `AccessRules`: the groups' destination rules it
/// must pass beside the server's, whether it may open app-layer flows, its
/// tunnel limit, and whether it may log in at all.
public struct AccessProfile: Sendable, Hashable {
    public struct GroupPolicy: Sendable, Hashable {
        public var group: String
        public var policy: DestinationPolicy
    }

    public var groups: [String]
    /// Every one must allow a destination: a Deny in any refuses, and each non-empty Allow list must match.
    public var policies: [GroupPolicy]
    public var appLayer: Bool
    /// The group whose `AppLayer` false refuses it (nil: the server's own setting, or allowed).
    public var appLayerRefusedBy: String?
    /// The smallest `Limits.Tunnels` of its groups; nil: only the server's per-login cap.
    public var tunnels: Int?
    /// The smallest `Limits.BandwidthMbit` of its groups, each way; nil: not limited.
    public var bandwidthMbit: Double?
    public var expires: Date?
    public var disabled: Bool
    /// What its groups push to its IP tunnels instead of the server's own (nil: the server's).
    public var pushed = Pushed()

    public struct Pushed: Sendable, Hashable {
        public var routes: [IPv4Network]?
        public var ipv6Routes: [IPv6Network]?
        public var dns: DNSSettings?
    }

    public func loginRefusal(now: Date) -> LoginAccessRefusal? {
        if disabled { return .disabled }
        if let expires, expires <= now { return .expired(expires) }
        return nil
    }

    /// Why an app-layer (TCP or UDP) flow is refused; nil when it may open.
    public var appLayerRefusal: String? {
        guard !appLayer else { return nil }
        if let group = appLayerRefusedBy { return "app-layer flows are off for group \(group.debugDescription) (its AppLayer is false)" }
        return "app-layer flows are off on this server (Server.AppLayer false, or --no-app-layer)"
    }

    /// Stage 1 of the groups' rules (`DestinationPolicy.decision(forHost:port:)`).
    public func refusal(forHost host: String, port: Int) -> String? {
        for entry in policies {
            if let reason = entry.policy.decision(forHost: host, port: port).refusalReason { return "group \(entry.group.debugDescription): \(reason)" }
        }
        return nil
    }

    /// Stage 2 of the groups' rules, for each address the host resolved to.
    public func refusal(forAddress address: IPAddress, port: Int, requestedHost: String) -> String? {
        for entry in policies {
            if let reason = entry.policy.decision(forAddress: address, port: port, requestedHost: requestedHost).refusalReason {
                return "group \(entry.group.debugDescription): \(reason)"
            }
        }
        return nil
    }
}
