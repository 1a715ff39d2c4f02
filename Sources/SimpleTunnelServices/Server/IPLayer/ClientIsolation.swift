/// Whether one IP-layer client may reach another's lease. By default it may
/// not (the kernel would route pool to pool through the TUN device): each
/// client reaches the server and the networks behind it, as OpenVPN without
/// `client-to-client`. `--client-to-client` (or `Server.ClientIsolation`
/// false) lets them talk.
public struct ClientIsolation: Sendable, Equatable {
    public var ipv4Pool: ClosedRange<IPv4Address>?
    public var ipv6Pool: ClosedRange<IPv6Address>?

    public init(ipv4Pool: ClosedRange<IPv4Address>?, ipv6Pool: ClosedRange<IPv6Address>?) {
        self.ipv4Pool = ipv4Pool
        self.ipv6Pool = ipv6Pool
    }

    /// A packet to any address of the pool is for another client (its own lease is the source, never the destination it sends to).
    func separates(_ destination: IPv4Address) -> Bool {
        ipv4Pool?.contains(destination) ?? false
    }

    func separates(_ destination: IPv6Address) -> Bool {
        ipv6Pool?.contains(destination) ?? false
    }
}
