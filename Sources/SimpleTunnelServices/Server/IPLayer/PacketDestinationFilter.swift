/// The destination policy as the IP layer applies it to every packet a client
/// sends: the Deny rules, and the default denials unless an Allow address
/// rule opens them. Allow lists do not restrict packets, and name rules cannot
/// (a packet has no name). Compiled once into masks and port ranges, so the
/// check per packet is integer compares with no allocation.
struct PacketDestinationFilter: Sendable {
    /// One address rule: a network of either family (`Bits` wide) and, unless any port, its ports.
    struct Entry<Bits: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
        let network: Bits
        let mask: Bits
        /// Nil: any port, and packets without one (ICMP, later fragments).
        let ports: [ClosedRange<Int>]?

        /// `*` matches every address; a rule of the other family, or a name rule, none.
        init?(_ rule: DestinationRule) {
            switch rule.target {
            case .any:
                network = 0
                mask = 0
            case .ipv4(let ipv4) where Bits.bitWidth == 32:
                network = Bits(ipv4.address.rawValue)
                mask = Self.mask(ipv4.prefixLength)
            case .ipv6(let ipv6) where Bits.bitWidth == 128:
                network = Bits(truncatingIfNeeded: ipv6.address.rawValue)
                mask = Self.mask(ipv6.prefixLength)
            case .ipv4, .ipv6, .hostName, .subdomains:
                return nil
            }
            ports = rule.ports == .any ? nil : rule.ports.ranges
        }

        private static func mask(_ prefixLength: Int) -> Bits {
            prefixLength == 0 ? 0 : Bits.max << (Bits.bitWidth - prefixLength)
        }

        func matches(_ address: Bits, port: Int?) -> Bool {
            guard address & mask == network else { return false }
            guard let ports else { return true }
            guard let port else { return false }
            return ports.contains { $0.contains(port) }
        }
    }

    typealias Entry4 = Entry<UInt32>
    typealias Entry6 = Entry<UInt128>

    let denied: [Entry4]
    let defaultDenied: [Entry4]
    let openers: [Entry4]
    let denied6: [Entry6]
    let defaultDenied6: [Entry6]
    let openers6: [Entry6]

    init(_ policy: DestinationPolicy) {
        denied = policy.denyRules.compactMap(Entry4.init)
        defaultDenied = policy.defaultDenyRules.compactMap(Entry4.init)
        openers = policy.allowRules.filter(\.isAddressRule).compactMap(Entry4.init)
        denied6 = policy.denyRules.compactMap(Entry6.init)
        defaultDenied6 = policy.defaultDenyRules.compactMap(Entry6.init)
        openers6 = policy.allowRules.filter(\.isAddressRule).compactMap(Entry6.init)
    }

    var isEmpty: Bool { denied.isEmpty && defaultDenied.isEmpty && denied6.isEmpty && defaultDenied6.isEmpty }

    /// Whether a packet to the IPv6 `destination` is refused. An IPv4-mapped
    /// destination is judged as the IPv4 address it names too, as for flows.
    func refuses(_ destination: IPv6Address, port: Int?) -> Bool {
        if let ipv4 = destination.ipv4Mapped, refuses(ipv4, port: port) { return true }
        let address = destination.rawValue
        func any(_ entries: [Entry6]) -> Bool {
            entries.contains { $0.matches(address, port: port) }
        }
        if any(denied6) { return true }
        return any(defaultDenied6) && !any(openers6)
    }

    /// Whether a packet to `destination` (TCP or UDP `port`, else nil) is refused.
    /// 0.0.0.0/8 is judged as 127.0.0.1 too, as for flows.
    func refuses(_ destination: IPv4Address, port: Int?) -> Bool {
        let address = destination.rawValue
        let alias: UInt32? = address >> 24 == 0 ? IPv4Address(127, 0, 0, 1).rawValue : nil
        func any(_ entries: [Entry4]) -> Bool {
            entries.contains { entry in
                if entry.matches(address, port: port) { return true }
                guard let alias else { return false }
                return entry.matches(alias, port: port)
            }
        }
        if any(denied) { return true }
        return any(defaultDenied) && !any(openers)
    }
}
