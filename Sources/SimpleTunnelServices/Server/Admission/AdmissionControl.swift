/// Decides which connections the server takes, as a value: the server asks
/// and carries the answer out. A connection is *unauthenticated* from accept
/// until its first valid message (its login when logins are required), then
/// a *tunnel*. Only unauthenticated connections are subject to the startups
/// policy and the per-address cap, so idle sockets cannot take the places of
/// tunnels, and one address cannot take everyone's startups.
public struct AdmissionControl: Sendable {
    public struct Limits: Sendable, Hashable {
        public var startups = StartupsPolicy.default
        /// Unauthenticated connections from one address (an IPv6 /64).
        public var startupsPerAddress = 16
        public var tunnels = 256
        /// Set: only peers in these networks may connect at all (`--plaintext-clients`);
        /// others are refused before their first byte is read.
        public var clientNetworks: IPNetworkList?

        public init() {}
    }

    public enum Decision: Sendable, Hashable {
        case admit
        case refuse(AdmissionRefusal)
    }

    public internal(set) var limits: Limits
    public private(set) var unauthenticated = 0
    public private(set) var tunnels = 0
    private var unauthenticatedByGroup: [ClientAddressGroup: Int] = [:]

    public init(limits: Limits) {
        self.limits = limits
    }

    public func unauthenticated(from group: ClientAddressGroup) -> Int {
        unauthenticatedByGroup[group] ?? 0
    }

    /// A connection was accepted from `address` (nil when not an IP peer), whose
    /// budgets are kept for `group`; `roll` is uniform in 0..<100.
    public mutating func accept(from group: ClientAddressGroup, address: IPAddress? = nil, roll: Int) -> Decision {
        // First: a peer that may not connect at all is refused as such, whatever else is full.
        if let networks = limits.clientNetworks, !(address.map(networks.contains) ?? false) { return .refuse(.unlistedAddress) }
        // Checked first: nothing the per-address or random rules say matters when no tunnel could follow.
        if tunnels >= limits.tunnels { return .refuse(.tunnelsFull) }
        if unauthenticated(from: group) >= limits.startupsPerAddress { return .refuse(.perAddress) }
        if unauthenticated >= limits.startups.full { return .refuse(.startupsFull) }
        if limits.startups.drops(startups: unauthenticated, roll: roll) { return .refuse(.earlyDrop) }
        unauthenticated += 1
        unauthenticatedByGroup[group, default: 0] += 1
        return .admit
    }

    /// An admitted connection sent its first valid message (or logged in):
    /// it leaves the startups and becomes a tunnel, if there is room for one.
    public mutating func promote(from group: ClientAddressGroup) -> Decision {
        leaveStartups(group)
        guard tunnels < limits.tunnels else { return .refuse(.tunnelsFull) }
        tunnels += 1
        return .admit
    }

    /// An admitted connection closed before it was promoted.
    public mutating func leaveStartups(_ group: ClientAddressGroup) {
        unauthenticated -= 1
        let remaining = unauthenticated(from: group) - 1
        unauthenticatedByGroup[group] = remaining > 0 ? remaining : nil
    }

    /// A promoted tunnel closed.
    public mutating func tunnelClosed() {
        tunnels -= 1
    }
}
