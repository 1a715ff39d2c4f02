/// The destination policy as the IP layer applies it to every packet a client
/// sends: the Deny rules, and the default denials unless an Allow address
/// rule opens them. Allow lists do not restrict packets, and name rules cannot
/// (a packet has no name). A port rule fails closed: a packet whose port
/// could not be found is dropped when such a rule covers its destination.
/// Compiled once into masks and port ranges, so the
/// check per packet is integer compares with no allocation.
struct PacketDestinationFilter: Sendable {
    /// One address rule: a network of either family (`Bits` wide) and, unless any port, its ports.
    struct Entry<Bits: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
        let network: Bits
        let mask: Bits
        /// Nil: any port, and packets without one (ICMP, later fragments) or
        /// whose port could not be found.
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

        func match(_ address: Bits, port: PortLookup) -> Match {
            guard address & mask == network else { return .no }
            guard let ports else { return .yes }
            switch port {
            case .port(let port): return ports.contains { $0.contains(Int(port)) } ? .yes : .no
            case .noPort: return .no
            case .undeterminable: return .unknown
            }
        }
    }

    /// Whether a rule matches a packet: `unknown` when its address does and
    /// its ports might, the packet's port being undeterminable.
    enum Match: Int, Comparable {
        case no, unknown, yes

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What becomes of a packet, the stricter first when two verdicts meet.
    enum Verdict: Int, Comparable {
        case allowed
        /// A port rule could decide it, but the packet's port could not be
        /// found: dropped, as it may be what a Deny rule refuses or what an
        /// opener does not open.
        case portUndeterminable
        case refused

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
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

    /// What becomes of a packet to the IPv6 `destination`. An IPv4-mapped
    /// destination is judged as the IPv4 address it names too, as for flows.
    func verdict(for destination: IPv6Address, port: PortLookup) -> Verdict {
        let address = destination.rawValue
        func any(_ entries: [Entry6]) -> Match {
            entries.reduce(.no) { max($0, $1.match(address, port: port)) }
        }
        let verdict = Self.verdict(deny: any(denied6), defaultDeny: any(defaultDenied6), open: any(openers6))
        guard let ipv4 = destination.ipv4Mapped else { return verdict }
        return max(verdict, self.verdict(for: ipv4, port: port))
    }

    /// What becomes of a packet to `destination`. 0.0.0.0/8 is judged as
    /// 127.0.0.1 too, as for flows.
    func verdict(for destination: IPv4Address, port: PortLookup) -> Verdict {
        let address = destination.rawValue
        let alias: UInt32? = address >> 24 == 0 ? IPv4Address(127, 0, 0, 1).rawValue : nil
        func any(_ entries: [Entry4]) -> Match {
            entries.reduce(.no) { match, entry in
                max(match, entry.match(address, port: port), alias.map { entry.match($0, port: port) } ?? .no)
            }
        }
        return Self.verdict(deny: any(denied), defaultDeny: any(defaultDenied), open: any(openers))
    }

    /// Whether a packet to `destination` stays on the client's link: multicast,
    /// broadcast and link-local, as link-scoped IPv6 does, unless an Allow
    /// address rule opens the link-local address for it, as it opens a default
    /// denial (a cloud's resolver at 169.254.169.253, port 53).
    func keepsOnLink(_ destination: IPv4Address, port: PortLookup) -> Bool {
        guard IPv4PacketHeader.isLinkScoped(destination) else { return false }
        guard IPv4PacketHeader.isLinkLocal(destination) else { return true }
        return !openers.contains { $0.match(destination.rawValue, port: port) == .yes }
    }

    /// A Deny rule refuses; a default denial refuses unless an opener
    /// allows. Where a port rule's answer is unknown, so is the packet's fate,
    /// and it is dropped as `portUndeterminable` rather than let through.
    private static func verdict(deny: Match, defaultDeny: Match, open: Match) -> Verdict {
        if deny == .yes { return .refused }
        var verdict: Verdict = deny == .unknown ? .portUndeterminable : .allowed
        if defaultDeny != .no && open != .yes {
            verdict = max(verdict, defaultDeny == .yes && open == .no ? .refused : .portUndeterminable)
        }
        return verdict
    }
}
