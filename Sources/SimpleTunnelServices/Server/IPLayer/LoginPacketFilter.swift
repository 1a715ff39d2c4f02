/// The destination rules of a login's groups as the IP layer applies them to
/// its packets, after the server's own (`PacketDestinationFilter`). Unlike the
/// server's Allow list, which only opens default denials for packets, a
/// group's non-empty Allow list restricts them: a packet must match one of its
/// address rules. Name rules cannot match a packet, so a group allowing only
/// names lets none of its members' packets through. As for the server's
/// rules, a port rule fails closed on a packet whose port is hidden.
struct LoginPacketFilter: Sendable {
    struct Group: Sendable {
        let denied: [PacketDestinationFilter.Entry4]
        let allowed: [PacketDestinationFilter.Entry4]
        let denied6: [PacketDestinationFilter.Entry6]
        let allowed6: [PacketDestinationFilter.Entry6]
        /// A non-empty Allow list: only what it matches passes.
        let restricts: Bool

        init(_ policy: DestinationPolicy) {
            denied = policy.denyRules.compactMap(PacketDestinationFilter.Entry4.init)
            denied6 = policy.denyRules.compactMap(PacketDestinationFilter.Entry6.init)
            allowed = policy.allowRules.compactMap(PacketDestinationFilter.Entry4.init)
            allowed6 = policy.allowRules.compactMap(PacketDestinationFilter.Entry6.init)
            restricts = !policy.allowRules.isEmpty
        }

        func verdict(deny: PacketDestinationFilter.Match, allow: PacketDestinationFilter.Match) -> PacketDestinationFilter.Verdict {
            if deny == .yes { return .refused }
            var verdict: PacketDestinationFilter.Verdict = deny == .unknown ? .portUndeterminable : .allowed
            if restricts && allow != .yes {
                verdict = max(verdict, allow == .unknown ? .portUndeterminable : .refused)
            }
            return verdict
        }
    }

    let groups: [Group]

    init(_ policies: [DestinationPolicy]) {
        groups = policies.map(Group.init)
    }

    init(groups: [Group]) {
        self.groups = groups
    }

    var isEmpty: Bool { groups.isEmpty }

    func verdict(for destination: IPv4Address, port: PortLookup) -> PacketDestinationFilter.Verdict {
        let address = destination.rawValue
        let alias: UInt32? = address >> 24 == 0 ? IPv4Address(127, 0, 0, 1).rawValue : nil
        func any(_ entries: [PacketDestinationFilter.Entry4]) -> PacketDestinationFilter.Match {
            entries.reduce(.no) { match, entry in
                max(match, entry.match(address, port: port), alias.map { entry.match($0, port: port) } ?? .no)
            }
        }
        return groups.reduce(PacketDestinationFilter.Verdict.allowed) { max($0, $1.verdict(deny: any($1.denied), allow: any($1.allowed))) }
    }

    func verdict(for destination: IPv6Address, port: PortLookup) -> PacketDestinationFilter.Verdict {
        let address = destination.rawValue
        func any(_ entries: [PacketDestinationFilter.Entry6]) -> PacketDestinationFilter.Match {
            entries.reduce(.no) { max($0, $1.match(address, port: port)) }
        }
        let verdict = groups.reduce(PacketDestinationFilter.Verdict.allowed) { max($0, $1.verdict(deny: any($1.denied6), allow: any($1.allowed6))) }
        guard let ipv4 = destination.ipv4Mapped else { return verdict }
        return max(verdict, self.verdict(for: ipv4, port: port))
    }
}
