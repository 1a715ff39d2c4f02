import Foundation

extension AccessRules {
    /// What a reload changes, one line per group and login, for its log line:
    /// `group "contractors": policy changed`, `login "bob": groups staff → contractors`.
    public func changes(from old: AccessRules) -> [String] {
        var lines: [String] = []
        if appLayer != old.appLayer { lines.append("app-layer flows: \(old.appLayer ? "on" : "off") → \(appLayer ? "on" : "off")") }
        for name in Set(groups.keys).union(old.groups.keys).sorted() {
            let label = "group \(name.debugDescription)"
            switch (old.groups[name], groups[name]) {
            case (nil, .some): lines.append("\(label): added")
            case (.some, nil): lines.append("\(label): removed")
            case (let before?, let after?) where before != after:
                var what: [String] = []
                if before.policy != after.policy { what.append("policy changed") }
                if before.appLayer != after.appLayer { what.append("AppLayer \(Self.text(before.appLayer)) → \(Self.text(after.appLayer))") }
                if before.tunnels != after.tunnels { what.append("Tunnels \(Self.text(before.tunnels)) → \(Self.text(after.tunnels))") }
                if before.routes != after.routes || before.ipv6Routes != after.ipv6Routes { what.append("Routes changed") }
                if before.dns != after.dns { what.append("DNS changed") }
                if before.bandwidthMbit != after.bandwidthMbit {
                    what.append("BandwidthMbit \(Self.text(before.bandwidthMbit)) → \(Self.text(after.bandwidthMbit))")
                }
                lines.append("\(label): \(what.joined(separator: ", "))")
            default: break
            }
        }
        for login in Set(users.keys).union(old.users.keys).sorted() {
            let label = "login \(PeerText.quoted(login, limit: 64))"
            switch (old.users[login], users[login]) {
            case (nil, .some(let user)): lines.append("\(label): added (\(Self.describe(user)))")
            case (.some, nil): lines.append("\(label): removed (no groups)")
            case (let before?, let after?) where before != after:
                var what: [String] = []
                if before.groups != after.groups {
                    what.append("groups \(Self.list(before.groups)) → \(Self.list(after.groups))")
                }
                if before.expires != after.expires {
                    what.append("expires \(Self.text(before.expires)) → \(Self.text(after.expires))")
                }
                if before.disabled != after.disabled { what.append(after.disabled ? "disabled" : "enabled") }
                if before.ipv4Address != after.ipv4Address || before.ipv6Address != after.ipv6Address {
                    what.append("fixed address \(Self.fixed(before)) → \(Self.fixed(after)) (its IP tunnels end, so it reconnects to it)")
                }
                lines.append("\(label): \(what.joined(separator: ", "))")
            default: break
            }
        }
        return lines
    }

    private static func describe(_ user: User) -> String {
        var parts = ["groups \(list(user.groups))"]
        if let expires = user.expires { parts.append("expires \(text(expires))") }
        if user.disabled { parts.append("disabled") }
        if user.ipv4Address != nil || user.ipv6Address != nil { parts.append("fixed address \(fixed(user))") }
        return parts.joined(separator: ", ")
    }

    /// Logins with a fixed address before or after whose fixed address differs: their open IP tunnels hold the old one.
    public func loginsWhoseFixedAddressChanged(from old: AccessRules) -> Set<String> {
        var logins: Set<String> = []
        for login in Set(users.keys).union(old.users.keys) {
            let before = old.users[login], after = users[login]
            if before?.ipv4Address != after?.ipv4Address || before?.ipv6Address != after?.ipv6Address { logins.insert(login) }
        }
        return logins
    }

    private static func fixed(_ user: User) -> String {
        let parts = [user.ipv4Address?.description, user.ipv6Address?.description].compactMap { $0 }
        return parts.isEmpty ? "none" : parts.joined(separator: " and ")
    }

    private static func list(_ names: [String]) -> String { names.isEmpty ? "none" : names.joined(separator: ",") }

    private static func text(_ value: Bool?) -> String { value.map { $0 ? "true" : "false" } ?? "unset" }

    private static func text(_ value: Int?) -> String { value.map(String.init) ?? "unset" }

    private static func text(_ value: Double?) -> String { value.map { $0.formatted(.number.grouping(.never)) } ?? "unset" }

    private static func text(_ value: Date?) -> String { value.map { $0.formatted(.iso8601) } ?? "never" }
}
