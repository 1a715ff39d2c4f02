import Foundation
import NIOConcurrencyHelpers

/// The access rules in force (`AccessRules`), which a reload replaces: every
/// tunnel asks it at each flow's open and each batch of its packets, by its
/// login, so a change holds for the next flow and packet of tunnels already open.
public final class ServerAccess: Sendable {
    private struct State {
        var rules: AccessRules
        /// Each group's rules compiled for packets once per reload, not per batch.
        var packetGroups: [String: LoginPacketFilter.Group]

        init(_ rules: AccessRules) {
            self.rules = rules
            self.packetGroups = rules.groups.compactMapValues { $0.policy.map(LoginPacketFilter.Group.init) }
        }
    }

    private let state: NIOLockedValueBox<State>
    /// Each login's traffic, limited as its groups' `Limits.BandwidthMbit` say.
    public let traffic: LoginTraffic

    public init(_ rules: AccessRules = .none) {
        state = NIOLockedValueBox(State(rules))
        traffic = LoginTraffic(limits: rules.bandwidthLimits)
    }

    public var rules: AccessRules { state.withLockedValue { $0.rules } }

    public func replace(with rules: AccessRules) {
        let fresh = State(rules)
        state.withLockedValue { $0 = fresh }
        traffic.setLimits(rules.bandwidthLimits)
    }

    public func profile(for login: String?) -> AccessProfile {
        state.withLockedValue { $0.rules }.profile(for: login)
    }

    /// The packet rules of `login`'s groups; nil when none of its groups has a policy.
    func packetFilter(for login: String?) -> LoginPacketFilter? {
        guard let login else { return nil }
        return state.withLockedValue { state in
            guard let user = state.rules.users[login], !user.groups.isEmpty else { return nil }
            let groups = user.groups.compactMap { state.packetGroups[$0] }
            return groups.isEmpty ? nil : LoginPacketFilter(groups: groups)
        }
    }
}
