import Foundation

extension AccessRules {
    static let groupKeys = ["Policy", "AppLayer", "Limits", "Routes", "DNS"]
    static let groupRouteKeys = ["IPv4", "IPv6"]
    static let groupLimitKeys = ["Tunnels", "BandwidthMbit"]
    static let userKeys = ["Groups", "Expires", "Disabled", "IPv4Address", "IPv6Address"]

    /// Reads `Server.Groups`, `Server.Users` and `Server.AppLayer` as strictly
    /// as the rest of `Server`: an unknown key, a group no one defined, a bad
    /// rule or date, a limit below 1 is refused with its key path.
    init(server: ConfigurationDictionary) throws(ConfigurationError) {
        self.init()
        appLayer = try server.optional("AppLayer")?.boolean(
            expected: "true (clients may open TCP and UDP flows) or false (IP tunnels only, for everyone)") ?? true
        if let node = server.optional("Groups") {
            let dictionary = try node.dictionary()
            for name in dictionary.entries.keys.sorted() {
                guard let group = dictionary.optional(name) else { continue }
                groups[name] = try Self.group(group)
            }
        }
        if let node = server.optional("Users") {
            let dictionary = try node.dictionary()
            for login in dictionary.entries.keys.sorted() {
                guard let user = dictionary.optional(login) else { continue }
                guard TunnelLoginSyntax.isValid(login) else {
                    throw .invalidValue(user.keyPath, value: login.debugDescription, expected: "a login passwd could have made (1 to 64 characters, no ':', spaces or control characters)")
                }
                users[login] = try Self.user(user, knownGroups: groups.keys.sorted())
            }
        }
    }

    private static func group(_ node: ConfigurationNode) throws(ConfigurationError) -> Group {
        let entry = try node.dictionary()
        try entry.rejectUnknownKeys(groupKeys)
        var group = Group()
        if let policy = entry.optional("Policy") { group.policy = try DestinationPolicy(policy) }
        group.appLayer = try entry.optional("AppLayer")?.boolean(
            expected: "true (members may open TCP and UDP flows) or false (members get the IP tunnel only)")
        if let limits = try entry.optional("Limits")?.dictionary() {
            try limits.rejectUnknownKeys(groupLimitKeys)
            group.tunnels = try limits.optional("Tunnels")?.positiveInteger(maximum: 1_000_000)
            group.bandwidthMbit = try limits.optional("BandwidthMbit")?.positiveNumber(maximum: 1_000_000, unit: "Mbit/s")
        }
        if let routes = try entry.optional("Routes")?.dictionary() {
            try routes.rejectUnknownKeys(groupRouteKeys)
            group.routes = try routes.optional("IPv4").map { node throws(ConfigurationError) in try TunnelServerConfiguration.routes(node) }
            group.ipv6Routes = try routes.optional("IPv6").map { node throws(ConfigurationError) in try TunnelServerConfiguration.ipv6Routes(node) }
        }
        group.dns = try entry.optional("DNS").map { node throws(ConfigurationError) in try TunnelServerConfiguration.dns(node) }
        return group
    }

    private static func user(_ node: ConfigurationNode, knownGroups: [String]) throws(ConfigurationError) -> User {
        let entry = try node.dictionary()
        try entry.rejectUnknownKeys(userKeys)
        var user = User()
        if let groups = entry.optional("Groups") {
            for element in try groups.array(of: "group names from Server.Groups") {
                let name = try element.nonEmptyString(expected: "the name of a group in Server.Groups")
                guard knownGroups.contains(name) else {
                    let hint = closestKey(to: name, among: knownGroups).map { "; did you mean \($0)?" } ?? ""
                    let known = knownGroups.isEmpty ? "Server.Groups defines none" : "known groups: \(knownGroups.joined(separator: ", "))"
                    throw element.invalid(expected: "the name of a group in Server.Groups", detail: "no such group\(hint); \(known)")
                }
                user.groups.append(name)
            }
        }
        if let expires = entry.optional("Expires") { user.expires = try date(expires) }
        user.disabled = try entry.optional("Disabled")?.boolean(expected: "true (the login is refused) or false") ?? false
        user.ipv4Address = try entry.optional("IPv4Address")?.ipv4Address()
        user.ipv6Address = try entry.optional("IPv6Address")?.ipv6Address()
        return user
    }

    /// A plist `<date>`, or the same written as an ISO 8601 string (`2026-12-04T18:00:00Z`).
    private static func date(_ node: ConfigurationNode) throws(ConfigurationError) -> Date {
        let expected = "a date, <date>2026-12-04T18:00:00Z</date> (or that text as a string)"
        switch node.value {
        case .date(let seconds):
            return Date(timeIntervalSinceReferenceDate: seconds)
        case .string(let text):
            guard let date = try? Date(text, strategy: .iso8601) else { throw node.invalid(expected: expected) }
            return date
        default:
            throw node.invalid(expected: expected)
        }
    }
}
