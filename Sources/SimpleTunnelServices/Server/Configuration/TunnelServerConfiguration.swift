/// Everything the server's configuration property list says (PROTOCOL.md A5,
/// B4): what clients are told, and under `Server`, what only the server uses.
///
/// Build it with `load(contentsOf:resolvConf:)`, `init(propertyList:…)` or
/// start from `embeddedDefault`; hand clients `configurationForFetch()` or
/// `configuration(forLease:)`.
public struct TunnelServerConfiguration: Sendable, Hashable {
    /// Addresses leased to IP flows (`IPv4.Pool`), both ends included.
    public var pool: ClosedRange<IPv4Address>
    /// False when the file has neither `IPv4` nor `IPv6` (a server for flows
    /// only): `pool` is then the built-in one, used only if `--tun` asks for an IP layer.
    public var poolIsConfigured = true
    /// False when the file has an `IPv6` dictionary and no `IPv4` one: clients
    /// then get IPv6 leases only, and `pool` is unused.
    public var offersIPv4 = true
    /// `IPv4.Routes`, sent with every lease. Nil (no key) means the client
    /// routes everything through the tunnel; an empty list is sent as it is.
    public var routes: [IPv4Network]?
    /// `IPv6.Pool`: when set, every lease also holds one of these addresses (ours, PROTOCOL.md B7).
    public var ipv6Pool: ClosedRange<IPv6Address>?
    /// `IPv6.Routes`, sent with every lease beside the IPv4 ones. Nil means
    /// the client routes all its IPv6 through the tunnel.
    public var ipv6Routes: [IPv6Network]?
    /// Keys sent in every lease's `IPv6` dictionary beside `Address`, `PrefixLength` and `Routes` (`MTU`, set by the server).
    public var otherIPv6Keys: [String: PropertyListValue] = [:]
    /// Keys of the `IPv4` dictionary other than `Pool` and `Routes`, sent with
    /// every lease untouched. (`Address` and `Netmask` are never kept: the lease sets them.)
    public var otherIPv4Keys: [String: PropertyListValue]
    /// The `DNS` dictionary. Nil until filled from resolv.conf; empty
    /// `servers` (written `Servers = ()`) means "send no DNS settings".
    public var dns: DNSSettings?
    /// Top-level keys the server does not interpret (`Proxies` and any other),
    /// sent to clients untouched.
    public var passThroughKeys: [String: PropertyListValue]
    /// The `Server` dictionary: never sent to a client.
    public var server: TunnelServerSettings

    public init(
        pool: ClosedRange<IPv4Address>,
        routes: [IPv4Network]? = nil,
        ipv6Pool: ClosedRange<IPv6Address>? = nil,
        ipv6Routes: [IPv6Network]? = nil,
        otherIPv4Keys: [String: PropertyListValue] = [:],
        dns: DNSSettings? = nil,
        passThroughKeys: [String: PropertyListValue] = [:],
        server: TunnelServerSettings = TunnelServerSettings()
    ) {
        self.pool = pool
        self.routes = routes
        self.ipv6Pool = ipv6Pool
        self.ipv6Routes = ipv6Routes
        self.otherIPv4Keys = otherIPv4Keys
        self.dns = dns
        self.passThroughKeys = passThroughKeys
        self.server = server
    }

    /// Used when the server starts without `--config`: leases 10.90.0.2 to
    /// 10.90.0.254 (253 clients), no routes (clients send everything through
    /// the tunnel), DNS from resolv.conf via `fillingMissingDNS(fromResolvConf:)`,
    /// default limits and no destination policy.
    ///
    /// 10.90.0.0/24 is private (RFC 1918) and away from the ranges home
    /// routers, Docker (172.17/16) and most offices use, so it rarely collides
    /// with a client's own network; .1 is left for the server's side of the
    /// tunnel and .255 (broadcast in a /24) is not leased.
    public static let embeddedDefault = TunnelServerConfiguration(
        pool: IPv4Address(10, 90, 0, 2)...IPv4Address(10, 90, 0, 254)
    )

    /// This configuration with `dns` taken from resolv.conf text when the
    /// configuration has none; unchanged when `resolvConf` is nil or yields no
    /// usable server.
    public func fillingMissingDNS(fromResolvConf resolvConf: String?) -> TunnelServerConfiguration {
        guard dns == nil, let resolvConf, let resolved = ResolverConfiguration.dnsSettings(fromResolvConf: resolvConf) else {
            return self
        }
        var copy = self
        copy.dns = resolved
        return copy
    }
}
