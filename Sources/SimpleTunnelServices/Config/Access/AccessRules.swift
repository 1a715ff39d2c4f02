import Foundation

/// Who may do what (`Server.Groups` and `Server.Users`): each group's
/// destination rules, app-layer right and tunnel limit, and each login's
/// groups, expiry and whether it is disabled. A login with no entry is in no
/// group, so it is served exactly as a server without these keys serves it.
public struct AccessRules: Sendable, Hashable {
    public struct Group: Sendable, Hashable {
        /// `Policy`: a flow or packet must pass it as well as `Server.Policy`.
        public var policy: DestinationPolicy?
        /// `AppLayer`: false refuses members' TCP and UDP flows (IP tunnel only).
        public var appLayer: Bool?
        /// `Limits.Tunnels`: a member's tunnels open at once on this server.
        public var tunnels: Int?
        /// `Limits.BandwidthMbit`: each member's traffic each way, over all its tunnels on this server.
        public var bandwidthMbit: Double?

        public init(policy: DestinationPolicy? = nil, appLayer: Bool? = nil, tunnels: Int? = nil, bandwidthMbit: Double? = nil) {
            self.policy = policy
            self.appLayer = appLayer
            self.tunnels = tunnels
            self.bandwidthMbit = bandwidthMbit
        }
    }

    public struct User: Sendable, Hashable {
        public var groups: [String]
        public var expires: Date?
        public var disabled: Bool

        public init(groups: [String] = [], expires: Date? = nil, disabled: Bool = false) {
            self.groups = groups
            self.expires = expires
            self.disabled = disabled
        }
    }

    public var groups: [String: Group]
    public var users: [String: User]
    /// `Server.AppLayer` (or `--no-app-layer`): false refuses app-layer flows for everyone.
    public var appLayer: Bool

    /// No groups, no users, app-layer flows for all: the server as it was without these keys.
    public static let none = AccessRules()

    public init(groups: [String: Group] = [:], users: [String: User] = [:], appLayer: Bool = true) {
        self.groups = groups
        self.users = users
        self.appLayer = appLayer
    }

    /// What `login` may do now; nil (no login: no users file) is in no group.
    public func profile(for login: String?) -> AccessProfile {
        let user = login.flatMap { users[$0] }
        let names = user?.groups ?? []
        var policies: [AccessProfile.GroupPolicy] = []
        var tunnels: Int?
        var bandwidth: Double?
        var refusedBy: String?
        for name in names {
            guard let group = groups[name] else { continue }
            if let policy = group.policy { policies.append(AccessProfile.GroupPolicy(group: name, policy: policy)) }
            if let limit = group.tunnels { tunnels = min(tunnels ?? limit, limit) }
            if let limit = group.bandwidthMbit { bandwidth = min(bandwidth ?? limit, limit) }
            if group.appLayer == false && refusedBy == nil { refusedBy = name }
        }
        return AccessProfile(
            groups: names, policies: policies, appLayer: appLayer && refusedBy == nil, appLayerRefusedBy: appLayer ? refusedBy : nil,
            tunnels: tunnels, bandwidthMbit: bandwidth, expires: user?.expires, disabled: user?.disabled ?? false)
    }

    /// Each limited login's `bandwidthMbit` (the smallest of its groups'); a login not listed is not limited.
    public var bandwidthLimits: [String: Double] {
        var limits: [String: Double] = [:]
        for (login, user) in users {
            if let limit = user.groups.compactMap({ groups[$0]?.bandwidthMbit }).min() { limits[login] = limit }
        }
        return limits
    }

    /// Why `login` may not log in, or stay logged in, at `now`; nil when it may.
    public func loginRefusal(for login: String, now: Date = Date()) -> LoginAccessRefusal? {
        profile(for: login).loginRefusal(now: now)
    }

    /// Whether any login can expire: only then must open tunnels be watched for it.
    public var hasExpiries: Bool { users.values.contains { $0.expires != nil } }
}

/// Why a login is refused before anything else is checked against it.
public enum LoginAccessRefusal: Sendable, Hashable, CustomStringConvertible {
    case expired(Date)
    case disabled

    /// As the log writes it: `expired 2026-12-04T18:00:00Z`, `disabled`.
    public var description: String {
        switch self {
        case .expired(let date): return "expired \(date.formatted(.iso8601))"
        case .disabled: return "disabled"
        }
    }
}
