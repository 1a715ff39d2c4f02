import NIOCore

/// Either family of address, as a destination or a DNS server.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(IPv4Address)
    case v6(IPv6Address)

    /// Parses an IPv4 dotted quad or an IPv6 address; nil for anything else
    /// (host names, brackets, zone identifiers, surrounding spaces).
    public init?(_ text: some StringProtocol) {
        if let v4 = IPv4Address(text) {
            self = .v4(v4)
        } else if let v6 = IPv6Address(text) {
            self = .v6(v6)
        } else {
            return nil
        }
    }

    /// The address of an IP socket address; nil for a Unix-domain one.
    public init?(_ socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let address):
            self = .v4(IPv4Address(rawValue: UInt32(bigEndian: address.address.sin_addr.s_addr)))
        case .v6(let address):
            self = .v6(withUnsafeBytes(of: address.address.sin6_addr) { IPv6Address(bytes: $0) })
        case .unixDomainSocket:
            return nil
        }
    }

    /// The address with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) turned
    /// back into IPv4, so a dual-stack socket's view of an IPv4 peer is judged
    /// and shown as the IPv4 address it is.
    public var unmapped: IPAddress {
        if case .v6(let v6) = self, let v4 = v6.ipv4Mapped { return .v4(v4) }
        return self
    }

    public var isLoopback: Bool {
        switch self {
        case .v4(let address): return address.isLoopback
        case .v6(let address): return address.isLoopback || (address.ipv4Mapped?.isLoopback ?? false)
        }
    }

    public var isUnspecified: Bool {
        switch self {
        case .v4(let address): return address.isUnspecified
        case .v6(let address): return address.isUnspecified
        }
    }

    /// 169.254.0.0/16 or fe80::/10: no address to give a client.
    public var isLinkLocal: Bool {
        switch self {
        case .v4(let address): return address.rawValue >> 16 == 0xA9FE
        case .v6(let address): return address.rawValue >> 118 == 0x3FA
        }
    }

    public var description: String {
        switch self {
        case .v4(let address): return address.description
        case .v6(let address): return address.description
        }
    }
}
