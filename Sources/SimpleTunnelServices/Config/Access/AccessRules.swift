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
        /// `Routes.IPv4` and `Routes.IPv6`: pushed to members' IP tunnels instead of `IPv4.Routes` / `IPv6.Routes`.
        public var routes: [IPv4Network]?
        public var ipv6Routes: [IPv6Network]?
        /// `DNS`: pushed to members instead of the top-level `DNS`.
        public var dns: DNSSettings?
        /// `Limits.BandwidthMbit`: each member's traffic each way, over all its tunnels on this server.
        public var bandwidthMbit: Double?

        public init(
            policy: DestinationPolicy? = nil, appLayer: Bool? = nil, tunnels: Int? = nil, routes: [IPv4Network]? = nil,
            ipv6Routes: [IPv6Network]? = nil, dns: DNSSettings? = nil, bandwidthMbit: Double? = nil
        ) {
            self.policy = policy
            self.appLayer = appLayer
            self.tunnels = tunnels
            self.routes = routes
            self.ipv6Routes = ipv6Routes
            self.dns = dns
            self.bandwidthMbit = bandwidthMbit
        }
    }

    public struct User: Sendable, Hashable {
        public var groups: [String]
        public var expires: Date?
        public var disabled: Bool
        /// `IPv4Address`: the tunnel address this login always gets, reserved from the pool for it alone.
        public var ipv4Address: IPv4Address?
        /// `IPv6Address`: as `ipv4Address`, from the IPv6 pool.
        public var ipv6Address: IPv6Address?

        public init(
            groups: [String] = [], expires: Date? = nil, disabled: Bool = false, ipv4Address: IPv4Address? = nil, ipv6Address: IPv6Address? = nil
        ) {
            self.groups = groups
            self.expires = expires
            self.disabled = disabled
            self.ipv4Address = ipv4Address
            self.ipv6Address = ipv6Address
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

    /// `more` after `list`, leaving out what `list` holds already.
    private static func union<Element: Equatable>(_ list: [Element]?, _ more: [Element]) -> [Element] {
        let first = list ?? []
        return first + more.filter { !first.contains($0) }
    }

    /// What `login` may do now; nil (no login: no users file) is in no group.
    public func profile(for login: String?) -> AccessProfile {
        let user = login.flatMap { users[$0] }
        let names = user?.groups ?? []
        var policies: [AccessProfile.GroupPolicy] = []
        var tunnels: Int?
        var bandwidth: Double?
        var refusedBy: String?
        var pushed = AccessProfile.Pushed()
        for name in names {
            guard let group = groups[name] else { continue }
            // Routes are the union of the groups that set them; DNS is the first such group's.
            if let routes = group.routes { pushed.routes = Self.union(pushed.routes, routes) }
            if let routes = group.ipv6Routes { pushed.ipv6Routes = Self.union(pushed.ipv6Routes, routes) }
            if pushed.dns == nil { pushed.dns = group.dns }
            if let policy = group.policy { policies.append(AccessProfile.GroupPolicy(group: name, policy: policy)) }
            if let limit = group.tunnels { tunnels = min(tunnels ?? limit, limit) }
            if let limit = group.bandwidthMbit { bandwidth = min(bandwidth ?? limit, limit) }
            if group.appLayer == false && refusedBy == nil { refusedBy = name }
        }
        return AccessProfile(
            groups: names, policies: policies, appLayer: appLayer && refusedBy == nil, appLayerRefusedBy: appLayer ? refusedBy : nil,
            tunnels: tunnels, bandwidthMbit: bandwidth, expires: user?.expires, disabled: user?.disabled ?? false, pushed: pushed)
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

    /// The fixed addresses of every login that has one, as the address pools key their clients.
    public var fixedAddresses: FixedAddresses {
        var fixed = FixedAddresses()
        for (login, user) in users {
            let client = FixedAddresses.client(login: login)
            if let address = user.ipv4Address { fixed.ipv4[client] = address }
            if let address = user.ipv6Address { fixed.ipv6[client] = address }
        }
        return fixed
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
