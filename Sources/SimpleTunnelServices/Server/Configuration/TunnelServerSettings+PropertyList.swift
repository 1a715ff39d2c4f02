extension TunnelServerSettings {
    static let knownKeys = [
        "ListenAddress", "Port", "Certificate", "PrivateKey", "ClientCA", "Database", "DatabasePasswordFile", "ProxyProtocolFrom", "Limits",
        "Policy", "ClientIsolation", "AppLayer", "Groups", "Users",
    ]

    /// Reads the `Server` dictionary. Unlike the client keys, which are passed
    /// through, an unknown key here is an error: it is most likely a typo of a
    /// setting that would otherwise be silently ignored.
    init(_ node: ConfigurationNode, baseDirectory: String?) throws(ConfigurationError) {
        let server = try node.dictionary()
        try server.rejectUnknownKeys(Self.knownKeys)
        self.init()
        listenAddress = try server.optional("ListenAddress")?.nonEmptyString(expected: "an address to listen on, such as 0.0.0.0 or ::")
        port = try server.optional("Port")?.integer(in: 0...65535)
        if let node = server.optional("Certificate") { certificatePath = try Self.filePath(node, baseDirectory: baseDirectory) }
        if let node = server.optional("PrivateKey") { privateKeyPath = try Self.filePath(node, baseDirectory: baseDirectory) }
        if let node = server.optional("ClientCA") { clientCAPath = try Self.filePath(node, baseDirectory: baseDirectory) }
        databaseURL = try server.optional("Database")?.nonEmptyString(expected: "a postgres://USER@HOST:PORT/DATABASE address")
        if let node = server.optional("DatabasePasswordFile") { databasePasswordFilePath = try Self.filePath(node, baseDirectory: baseDirectory) }
        if let node = server.optional("ProxyProtocolFrom") { proxyProtocolFrom = try Self.networks(node) }
        if let node = server.optional("Limits") { limits = try Limits(node) }
        if let node = server.optional("Policy") { policy = try DestinationPolicy(node) }
        clientIsolation = try server.optional("ClientIsolation")?.boolean(
            expected: "true (clients reach only the server and the networks behind it) or false (they reach one another too)")
        access = try AccessRules(server: server)
    }

    /// An array of networks, each `CIDR` (or a bare address), such as ("10.0.0.5/32", "fd00:1::/64").
    private static func networks(_ node: ConfigurationNode) throws(ConfigurationError) -> IPNetworkList {
        let expected = "a network such as 10.0.0.5/32 or fd00:1::/64"
        var ipv4: [IPv4Network] = [], ipv6: [IPv6Network] = []
        for element in try node.array(of: "network strings") {
            let text = try element.nonEmptyString(expected: expected)
            do throws(IPNetworkListError) {
                let list = try IPNetworkList(parsing: text)
                ipv4 += list.ipv4
                ipv6 += list.ipv6
            } catch {
                throw element.invalid(expected: expected, detail: error.description)
            }
        }
        return IPNetworkList(ipv4: ipv4, ipv6: ipv6)
    }

    private static func filePath(_ node: ConfigurationNode, baseDirectory: String?) throws(ConfigurationError) -> String {
        let path = try node.nonEmptyString(expected: "a file path")
        guard let baseDirectory, !path.hasPrefix("/") else { return path }
        return baseDirectory.hasSuffix("/") ? baseDirectory + path : baseDirectory + "/" + path
    }
}

extension TunnelServerSettings.Limits {
    static var knownKeys: [String] { ServerLimit.all.map(\.key) }

    /// Each key is read as its limit says (`ServerLimit.all`); an unknown one is refused.
    init(_ node: ConfigurationNode) throws(ConfigurationError) {
        let limits = try node.dictionary()
        try limits.rejectUnknownKeys(Self.knownKeys)
        self.init()
        for limit in ServerLimit.all {
            if let node = limits.optional(limit.key) { values[limit.key] = try limit.read(node) }
        }
    }
}

extension DestinationPolicy {
    /// Reads `Server.Policy` = { Allow = (rules); Deny = (rules) }.
    init(_ node: ConfigurationNode) throws(ConfigurationError) {
        let policy = try node.dictionary()
        try policy.rejectUnknownKeys(["Allow", "Deny"])
        self.init(
            allowRules: try Self.rules(policy.optional("Allow")),
            denyRules: try Self.rules(policy.optional("Deny"))
        )
    }

    private static func rules(_ node: ConfigurationNode?) throws(ConfigurationError) -> [DestinationRule] {
        guard let node else { return [] }
        let expected = "a destination rule TARGET[:PORTS], such as 10.0.0.0/8, *.example.com:443 or [fd00::/8]:22"
        var rules: [DestinationRule] = []
        for element in try node.array(of: "destination rule strings") {
            let text = try element.string(expected: expected)
            do throws(DestinationRuleError) {
                rules.append(try DestinationRule(parsing: text))
            } catch {
                throw element.invalid(expected: expected, detail: error.problem)
            }
        }
        return rules
    }
}
