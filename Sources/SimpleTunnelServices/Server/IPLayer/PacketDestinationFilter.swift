/// The destination policy as the IP layer applies it to every packet a client
/// sends: the Deny rules, and the default denials unless an Allow address
/// rule opens them. Allow lists do not restrict packets, and name rules cannot
/// (a packet has no name). Compiled once into masks and port ranges, so the
/// check per packet is integer compares with no allocation.
struct PacketDestinationFilter: Sendable {
    /// One address rule: an IPv4 network and, unless any port, its ports.
    struct Entry: Sendable {
        let network: UInt32
        let mask: UInt32
        /// Nil: any port, and packets without one (ICMP, later fragments).
        let ports: [ClosedRange<Int>]?

        /// An IPv4 (or `*`) rule; nil for IPv6 and name rules, which no IPv4 packet can match.
        init?(_ rule: DestinationRule) {
            switch rule.target {
            case .any:
                network = 0
                mask = 0
            case .ipv4(let ipv4):
                network = ipv4.address.rawValue
                mask = IPv4Network.maskBits(ipv4.prefixLength)
            case .ipv6, .hostName, .subdomains:
                return nil
            }
            ports = rule.ports == .any ? nil : rule.ports.ranges
        }

        func matches(_ address: UInt32, port: Int?) -> Bool {
            guard address & mask == network else { return false }
            guard let ports else { return true }
            guard let port else { return false }
            return ports.contains { $0.contains(port) }
        }
    }

    /// One address rule for IPv6 packets: an IPv6 network (or `*`) and its ports.
    struct Entry6: Sendable {
        let network: UInt128
        let mask: UInt128
        let ports: [ClosedRange<Int>]?

        /// An IPv6 (or `*`) rule; nil for IPv4 and name rules.
        init?(_ rule: DestinationRule) {
            switch rule.target {
            case .any:
                network = 0
                mask = 0
            case .ipv6(let ipv6):
                network = ipv6.address.rawValue
                mask = ipv6.prefixLength == 0 ? 0 : UInt128.max << (128 - ipv6.prefixLength)
            case .ipv4, .hostName, .subdomains:
                return nil
            }
            ports = rule.ports == .any ? nil : rule.ports.ranges
        }

        func matches(_ address: UInt128, port: Int?) -> Bool {
            guard address & mask == network else { return false }
            guard let ports else { return true }
            guard let port else { return false }
            return ports.contains { $0.contains(port) }
        }
    }

    let denied: [Entry]
    let defaultDenied: [Entry]
    let openers: [Entry]
    let denied6: [Entry6]
    let defaultDenied6: [Entry6]
    let openers6: [Entry6]

    init(_ policy: DestinationPolicy) {
        denied = policy.denyRules.compactMap(Entry.init)
        defaultDenied = policy.defaultDenyRules.compactMap(Entry.init)
        openers = policy.allowRules.filter(\.isAddressRule).compactMap(Entry.init)
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
        func any(_ entries: [Entry]) -> Bool {
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
