extension TunnelServerConfiguration {
    /// Reads a configuration property list (the shape of Apple's sample
    /// `config.plist`, plus `Server`).
    ///
    /// - Parameters:
    ///   - resolvConf: resolv.conf text used when there is no `DNS` key.
    ///   - baseDirectory: folder that relative file paths under `Server` are
    ///     relative to (the configuration file's own folder); nil keeps them as written.
    public init(
        propertyList: PropertyListValue, resolvConf: String? = nil, baseDirectory: String? = nil
    ) throws(ConfigurationError) {
        guard case .dictionary(let entries) = propertyList else {
            throw .topLevelNotADictionary(found: propertyList.renderedForConfigurationError)
        }
        let top = ConfigurationDictionary(entries: entries, keyPath: .root)
        try Self.rejectNearMissesOfKnownKeys(top)

        // Without IPv4 the server carries flows only, unless --tun asks for the built-in pool.
        // Read strictly: a typo (`Route`) would otherwise send every client all its traffic.
        let ipv4 = try top.optional("IPv4")?.dictionary()
        if let ipv4, let key = ["Address", "Netmask", "MTU"].first(where: { ipv4.entries[$0] != nil }) {
            throw .inconsistent(ipv4.keyPath.appending(key), detail: "the server sets this for each client (the leased address, /32, and --mtu); remove it")
        }
        try ipv4?.rejectUnknownKeys(Self.ipv4Keys)
        let pool = try ipv4.map { ipv4 throws(ConfigurationError) in
            try Self.pool(ipv4.required("Pool", expected: "a dictionary with StartAddress and EndAddress"))
        }
        let routes = try ipv4?.optional("Routes").map { node throws(ConfigurationError) in try Self.routes(node) }
        let otherIPv4Keys: [String: PropertyListValue] = [:]

        let ipv6 = try top.optional("IPv6")?.dictionary()
        if let ipv6 {
            if let key = ["Address", "PrefixLength", "MTU"].first(where: { ipv6.entries[$0] != nil }) {
                throw .inconsistent(ipv6.keyPath.appending(key), detail: "the server sets this for each client (the leased address, /128); remove it")
            }
            try ipv6.rejectUnknownKeys(Self.ipv6Keys)
        }
        let ipv6Pool = try ipv6.map { ipv6 throws(ConfigurationError) in
            try Self.ipv6Pool(ipv6.required("Pool", expected: "a dictionary with StartAddress and EndAddress"))
        }
        let ipv6Routes = try ipv6?.optional("Routes").map { node throws(ConfigurationError) in try Self.ipv6Routes(node) }

        let dns = try top.optional("DNS").map { node throws(ConfigurationError) in try Self.dns(node) }
        let server = try top.optional("Server").map { node throws(ConfigurationError) in
            try TunnelServerSettings(node, baseDirectory: baseDirectory)
        }

        var passThroughKeys = entries
        for key in Self.interpretedKeys { passThroughKeys[key] = nil }

        self.init(
            pool: pool ?? Self.embeddedDefault.pool, routes: routes, ipv6Pool: ipv6Pool, ipv6Routes: ipv6Routes, otherIPv4Keys: otherIPv4Keys, dns: dns,
            passThroughKeys: passThroughKeys, server: server ?? TunnelServerSettings()
        )
        poolIsConfigured = pool != nil || ipv6Pool != nil
        offersIPv4 = pool != nil || ipv6Pool == nil
        self = fillingMissingDNS(fromResolvConf: resolvConf)
        try checkClientConfigurationFitsInAMessage()
        try checkFixedAddresses()
    }

    /// Top-level keys the server reads; every other one is passed to clients.
    static let interpretedKeys = ["IPv4", "IPv6", "DNS", "Server"]
    /// Top-level keys Apple's sample names (`SettingsKey`) and ours.
    static let knownTopLevelKeys = interpretedKeys + ["Proxies"]
    /// The keys of `IPv4` a file may set; `Address`, `Netmask` and `MTU` are the server's to set for each lease.
    static let ipv4Keys = ["Pool", "Routes"]
    /// The keys of `IPv6` a file may set, as for `IPv4`.
    static let ipv6Keys = ["Pool", "Routes"]
    /// The keys of one `IPv6.Routes` entry.
    static let ipv6RouteKeys = ["Address", "PrefixLength"]

    static let ipv4RouteKeys = ["Address", "Netmask"]
    /// `Servers` and `SearchDomains` the server reads; the others are NEDNSSettings' and passed to clients as written.
    static let dnsKeys = ["Servers", "SearchDomains", "MatchDomains", "MatchDomainsNoSearch", "DomainName"]

    /// Other top-level keys go to clients untouched, as Apple's format wants;
    /// but one a letter or two from a known key (`IPV4`, `Dns`) is a typo that
    /// would silently drop that whole dictionary.
    private static func rejectNearMissesOfKnownKeys(_ top: ConfigurationDictionary) throws(ConfigurationError) {
        for key in top.entries.keys.sorted() where !knownTopLevelKeys.contains(key) {
            if let suggestion = closestKey(to: key, among: knownTopLevelKeys) {
                throw .unknownKey(.root.appending(key), suggestion: suggestion, known: knownTopLevelKeys)
            }
        }
    }

    /// What clients receive travels inside one `openResult` frame of at most
    /// 128 KiB (PROTOCOL.md A1); a huge pass-through key (say, a proxy
    /// auto-configuration script pasted into `Proxies`) must fail here, at
    /// startup, rather than on every IP flow.
    private func checkClientConfigurationFitsInAMessage() throws(ConfigurationError) {
        let largest = configuration(forLease: offersIPv4 ? pool.upperBound : nil, ipv6: ipv6Pool?.upperBound)
        let size = BinaryPropertyListWriter.bytes(.dictionary(largest)).readableBytes
        guard size <= Self.maximumClientConfigurationSize else {
            throw .inconsistent(.root, detail: "what clients receive is \(size) bytes once encoded, more than the \(Self.maximumClientConfigurationSize) that fit in one tunnel message; make the keys passed through to clients (Proxies, others) smaller")
        }
    }

    /// A frame's 131072 bytes, less room for the message's own keys.
    static let maximumClientConfigurationSize = 126_976

    private static func pool(_ node: ConfigurationNode) throws(ConfigurationError) -> ClosedRange<IPv4Address> {
        let pool = try node.dictionary()
        try pool.rejectUnknownKeys(["StartAddress", "EndAddress"])
        let start = try pool.required("StartAddress", expected: "the first IPv4 address to lease").ipv4Address()
        let end = try pool.required("EndAddress", expected: "the last IPv4 address to lease").ipv4Address()
        guard start <= end else {
            throw .inconsistent(node.keyPath, detail: "StartAddress \(start) comes after EndAddress \(end); the pool runs from StartAddress up to EndAddress, both included")
        }
        return start...end
    }

    static func routes(_ node: ConfigurationNode) throws(ConfigurationError) -> [IPv4Network] {
        var routes: [IPv4Network] = []
        for element in try node.array(of: "routes, each a dictionary with Address and Netmask") {
            let route = try element.dictionary()
            // A misspelt key (`NetMask`) must not be read as a route without one.
            try route.rejectUnknownKeys(ipv4RouteKeys)
            let address = try route.required("Address", expected: "the route's network address, such as 10.0.0.0")
            let netmask = try route.required("Netmask", expected: "the route's netmask, such as 255.0.0.0")
            let addressText = try address.string(expected: "an IPv4 network address such as 10.0.0.0")
            let netmaskText = try netmask.string(expected: "an IPv4 netmask such as 255.0.0.0")
            do throws(NetworkParseError) {
                routes.append(try IPv4Network(address: addressText, netmask: netmaskText))
            } catch {
                switch error {
                case .invalidAddress(let text, _) where text == addressText:
                    throw address.invalid(expected: "an IPv4 network address such as 10.0.0.0")
                case .invalidAddress, .nonContiguousNetmask:
                    throw netmask.invalid(expected: "a contiguous IPv4 netmask such as 255.255.0.0")
                case .hostBitsSet, .invalidPrefixLength:
                    throw .inconsistent(element.keyPath, detail: "\(addressText)/\(netmaskText): \(error)")
                }
            }
        }
        return routes
    }

    static func dns(_ node: ConfigurationNode) throws(ConfigurationError) -> DNSSettings {
        let dns = try node.dictionary()
        try dns.rejectUnknownKeys(dnsKeys)
        let serversNode = try dns.required(
            "Servers", expected: "an array of DNS server addresses (an empty array sends clients no DNS settings)"
        )
        var servers: [IPAddress] = []
        for element in try serversNode.array(of: "IP address strings") {
            servers.append(try element.ipAddress())
        }
        var searchDomains: [String] = []
        if let domainsNode = dns.optional("SearchDomains") {
            for element in try domainsNode.array(of: "domain name strings") {
                searchDomains.append(try element.nonEmptyString(expected: "a domain name such as example.com"))
            }
        }
        var otherKeys = dns.entries
        otherKeys["Servers"] = nil
        otherKeys["SearchDomains"] = nil
        return DNSSettings(servers: servers, searchDomains: searchDomains, otherKeys: otherKeys)
    }
}
