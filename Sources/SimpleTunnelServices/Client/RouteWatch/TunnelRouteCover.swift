/// What the tunnel's routes claim: the networks sent into the tunnel (or, for
/// a full tunnel's family the server does not carry, into a blackhole), and
/// what may rightly be routed around them (the route to the server itself).
/// A route added later with a longer prefix inside one of them wins over the
/// tunnel for its addresses: `overridden(by:)` says which, as a value.
struct TunnelRouteCover: Equatable, Sendable {
    var device: String
    var ipv4: [IPv4Network]
    var ipv6: [IPv6Network]
    var server: IPAddress?

    /// The cover that `IPTunnelSession` applies for `settings` (none with `--no-routes`).
    init(_ settings: IPTunnelSettings, applyRoutes: Bool, server: IPAddress?, device: String) {
        self.device = device
        self.server = server
        guard applyRoutes else {
            ipv4 = []
            ipv6 = []
            return
        }
        let halves4 = [IPv4Network(address: IPv4Address(rawValue: 0), prefixLength: 1), IPv4Network(address: IPv4Address(rawValue: 1 << 31), prefixLength: 1)].compactMap { $0 }
        let halves6 = ["::/1", "8000::/1"].compactMap { try? IPv6Network(parsing: $0) }
        if settings.address != nil {
            ipv4 = settings.routes ?? halves4
        } else {
            // IPv6 only: a full tunnel blackholes IPv4.
            ipv4 = settings.ipv6?.routes == nil ? halves4 : []
        }
        if let ipv6Settings = settings.ipv6 {
            ipv6 = ipv6Settings.routes ?? halves6
        } else {
            // A full IPv4-only tunnel blackholes IPv6.
            ipv6 = settings.address != nil && settings.routes == nil ? halves6 : []
        }
    }

    init(device: String, ipv4: [IPv4Network], ipv6: [IPv6Network], server: IPAddress?) {
        self.device = device
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.server = server
    }

    var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

    /// The tunnel's network that `route` wins over, or nil when it takes nothing from the tunnel.
    func overridden(by route: MonitoredRoute) -> IPNetworkChoice? {
        guard route.device != device else { return nil }
        switch route.destination {
        case .v4(let destination):
            if let server, case .v4(let host) = server.unmapped, destination == IPv4Network(host: host) { return nil }
            // Link-local and multicast never go through a tunnel.
            if Self.linkLocal4.contains(destination.address) || Self.multicast4.contains(destination.address) { return nil }
            return ipv4.first { $0.prefixLength < destination.prefixLength && $0.contains(destination.address) }.map(IPNetworkChoice.v4)
        case .v6(let destination):
            if let server, case .v6(let host) = server.unmapped, destination == IPv6Network(host: host) { return nil }
            if Self.linkLocal6.contains(destination.address) || Self.multicast6.contains(destination.address) { return nil }
            return ipv6.first { $0.prefixLength < destination.prefixLength && $0.contains(destination.address) }.map(IPNetworkChoice.v6)
        }
    }

    private static let linkLocal4 = IPv4Network(address: IPv4Address(rawValue: 0xA9FE_0000), prefixLength: 16)!
    private static let multicast4 = IPv4Network(address: IPv4Address(rawValue: 0xE000_0000), prefixLength: 4)!
    private static let linkLocal6 = try! IPv6Network(parsing: "fe80::/10")
    private static let multicast6 = try! IPv6Network(parsing: "ff00::/8")
}
