/// The tunnel addresses reserved for single logins (`Server.Users.<login>.IPv4Address`
/// and `IPv6Address`), keyed as the pools key their clients (`login:alice`):
/// each is handed to its login on every connect and to no one else.
public struct FixedAddresses: Sendable, Hashable {
    public var ipv4: [String: IPv4Address] = [:]
    public var ipv6: [String: IPv6Address] = [:]

    public init(ipv4: [String: IPv4Address] = [:], ipv6: [String: IPv6Address] = [:]) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    /// The pools' key of a login's leases, as `TunnelPeer.identity` makes it.
    public static func client(login: String) -> String { "login:\(login)" }

    public var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }
}
