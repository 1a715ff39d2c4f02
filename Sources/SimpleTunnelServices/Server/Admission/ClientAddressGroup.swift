import NIOCore

/// The unit a per-address budget is kept for: one IPv4 address, or one IPv6
/// /64 (a single host is usually handed a whole /64, so counting its
/// addresses one by one would give it 2^64 budgets).
public struct ClientAddressGroup: Sendable, Hashable, CustomStringConvertible {
    /// The address text for IPv4, `PREFIX/64` for IPv6, or the raw text of
    /// something that is not an IP address (kept apart, never merged).
    public let description: String

    private init(description: String) {
        self.description = description
    }

    public init(_ address: IPAddress) {
        switch address.unmapped {
        case .v4(let v4):
            self.init(description: v4.description)
        case .v6(let v6):
            self.init(description: "\(IPv6Address(rawValue: v6.rawValue & ~UInt128(UInt64.max)))/64")
        }
    }

    /// Groups an address given as text; anything unparsable is its own group.
    public init(text: String) {
        if let address = IPAddress(text) {
            self.init(address)
        } else {
            self.init(description: text)
        }
    }

    /// A peer's group; all peers without an IP address share one.
    public init(_ socketAddress: SocketAddress?) {
        if let socketAddress, let address = IPAddress(socketAddress) {
            self.init(address)
        } else {
            self.init(description: "unknown")
        }
    }
}
