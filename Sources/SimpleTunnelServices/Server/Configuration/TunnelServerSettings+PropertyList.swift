extension TunnelServerSettings {
    static let knownKeys = [
        "ListenAddress", "Port", "Certificate", "PrivateKey", "ClientCA", "Database", "DatabasePasswordFile", "Limits", "Policy",
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
        if let node = server.optional("Limits") { limits = try Limits(node) }
        if let node = server.optional("Policy") { policy = try DestinationPolicy(node) }
    }

    private static func filePath(_ node: ConfigurationNode, baseDirectory: String?) throws(ConfigurationError) -> String {
        let path = try node.nonEmptyString(expected: "a file path")
        guard let baseDirectory, !path.hasPrefix("/") else { return path }
        return baseDirectory.hasSuffix("/") ? baseDirectory + path : baseDirectory + "/" + path
    }
}

extension TunnelServerSettings.Limits {
    static let knownKeys = [
        "FlowsPerTunnel", "Tunnels", "FirstMessageTimeout", "ConnectTimeout", "UDPIdleTimeout", "UDPFlowsPerTunnel", "FlowSockets",
        "FlowDrainTimeout", "TunnelBufferMiB", "EarlyDataMiB", "ServerBufferMiB",
        "Startups", "StartupsPerAddress", "TLSHandshakeTimeout", "LoginChecks", "LoginChecksPerAddress", "LoginFailures",
    ]
    /// Far above any sensible value, low enough that arithmetic on it cannot overflow.
    static let maximumCount = 1 << 24
    /// One day: a longer timeout is a mistake, and the bound keeps `Duration` exact.
    static let maximumSeconds = 86_400.0
    /// Largest buffer budget a file may set, in MiB (1 TiB).
    static let maximumMiB = 1 << 20

    init(_ node: ConfigurationNode) throws(ConfigurationError) {
        let limits = try node.dictionary()
        try limits.rejectUnknownKeys(Self.knownKeys)
        self.init()
        if let node = limits.optional("FlowsPerTunnel") { flowsPerTunnel = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("Tunnels") { tunnels = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("FirstMessageTimeout") { firstMessageTimeout = try node.seconds(maximum: Self.maximumSeconds) }
        if let node = limits.optional("ConnectTimeout") { connectTimeout = try node.seconds(maximum: Self.maximumSeconds) }
        if let node = limits.optional("UDPIdleTimeout") { udpIdleTimeout = try node.seconds(maximum: Self.maximumSeconds) }
        if let node = limits.optional("UDPFlowsPerTunnel") {
            udpFlowsPerTunnel = try node.positiveInteger(maximum: Self.maximumCount)
        }
        if let node = limits.optional("FlowSockets") { flowSockets = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("FlowDrainTimeout") { flowDrainTimeout = try node.seconds(maximum: Self.maximumSeconds) }
        if let node = limits.optional("TunnelBufferMiB") { tunnelBufferMiB = try node.positiveInteger(maximum: Self.maximumMiB) }
        if let node = limits.optional("EarlyDataMiB") { earlyDataMiB = try node.positiveInteger(maximum: Self.maximumMiB) }
        if let node = limits.optional("ServerBufferMiB") { serverBufferMiB = try node.positiveInteger(maximum: Self.maximumMiB) }
        if let node = limits.optional("Startups") { startups = try Self.startups(node) }
        if let node = limits.optional("StartupsPerAddress") { startupsPerAddress = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("TLSHandshakeTimeout") { tlsHandshakeTimeout = try node.seconds(maximum: Self.maximumSeconds) }
        if let node = limits.optional("LoginChecks") { loginChecks = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("LoginChecksPerAddress") { loginChecksPerAddress = try node.positiveInteger(maximum: Self.maximumCount) }
        if let node = limits.optional("LoginFailures") { loginFailures = try node.positiveInteger(maximum: Self.maximumCount) }
    }

    /// `Startups` as OpenSSH writes MaxStartups ("START:RATE:FULL"), or a single number for FULL.
    private static func startups(_ node: ConfigurationNode) throws(ConfigurationError) -> StartupsPolicy {
        let expected = "START:RATE:FULL (such as \"\(StartupsPolicy.default)\") or a number"
        if case .integer = node.value {
            let full = try node.positiveInteger(maximum: maximumCount)
            return StartupsPolicy(uncheckedStart: full, rate: 100, full: full)
        }
        let text = try node.string(expected: expected)
        do throws(StartupsPolicyError) {
            let policy = try StartupsPolicy(parsing: text)
            guard policy.full <= maximumCount else { throw .outOfRange(start: policy.start, rate: policy.rate, full: policy.full) }
            return policy
        } catch {
            throw node.invalid(expected: expected, detail: error.description)
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
