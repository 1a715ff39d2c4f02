extension DestinationRule {
    /// Parses `TARGET[:PORTS]`.
    ///
    /// TARGET is one of:
    /// - `*`: anything;
    /// - `*.example.com`: names below example.com (not example.com itself);
    /// - a host name, `db.internal` (case-insensitive, trailing dot ignored);
    /// - an IPv4 address or network, `192.168.1.5`, `10.0.0.0/8`;
    /// - an IPv6 address or network, bare (`::1`, `fd00::/8`) when no ports
    ///   follow, in brackets (`[fd00::/8]:443`) when they do.
    ///
    /// PORTS is `N`, `N-M` or a comma list of those; without it, any port.
    public init(parsing text: String) throws(DestinationRuleError) {
        func failure(_ problem: String) -> DestinationRuleError {
            DestinationRuleError(rule: text, problem: problem)
        }
        guard !text.isEmpty else { throw failure("the rule is empty") }
        guard !text.contains(where: \.isWhitespace) else {
            throw failure("a rule has no spaces; write TARGET or TARGET:PORTS, such as 10.0.0.0/8:22,443")
        }

        let targetText: Substring
        let portsText: Substring?
        let target: Target
        if text.hasPrefix("[") {
            guard case let (bracketed, rest)? = TunnelEndpoint.bracketedHost(of: text[...]) else {
                throw failure("missing ']' after the IPv6 address")
            }
            targetText = bracketed
            if rest.isEmpty {
                portsText = nil
            } else if rest.hasPrefix(":") && rest.count > 1 {
                portsText = rest.dropFirst()
            } else {
                throw failure("expected ':PORTS' after ']', found \"\(rest)\"")
            }
            target = try Self.parseIPv6Target(targetText, failure: failure)
        } else {
            let colonCount = text.count(where: { $0 == ":" })
            if colonCount >= 2 {
                targetText = text[...]
                portsText = nil
                target = try Self.parseIPv6Target(targetText, failure: failure, bare: true)
            } else {
                let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                targetText = parts[0]
                portsText = parts.count == 2 ? parts[1] : nil
                target = try Self.parseTarget(targetText, failure: failure)
            }
        }

        var ports = PortSet.any
        if let portsText {
            do throws(PortSetParseError) {
                ports = try PortSet(parsing: portsText)
            } catch {
                throw failure(error.problem)
            }
        }
        self.init(target: target, ports: ports, text: text)
    }

    private static func parseIPv6Target(
        _ text: Substring, failure: (String) -> DestinationRuleError, bare: Bool = false
    ) throws(DestinationRuleError) -> Target {
        let network: IPv6Network
        do throws(NetworkParseError) {
            network = try IPv6Network(parsing: text)
        } catch {
            let hint = bare ? "; to add ports, write the IPv6 target in brackets, as in [fd00::/8]:443" : ""
            throw failure("\(error)\(hint)")
        }
        if let ipv4 = network.ipv4Mapped { return .ipv4(ipv4) }
        return .ipv6(network)
    }

    private static func parseTarget(
        _ text: Substring, failure: (String) -> DestinationRuleError
    ) throws(DestinationRuleError) -> Target {
        if text == "*" { return .any }
        if text.hasPrefix("*.") {
            let domain = HostName.normalised(text.dropFirst(2))
            if let problem = HostName.problem(with: domain) { throw failure(problem) }
            return .subdomains(of: domain)
        }
        if text.contains("*") {
            throw failure("a wildcard is either '*' alone or a leading '*.' as in *.example.com")
        }
        if text.isEmpty { throw failure("the target before ':' is empty") }
        let looksNumeric = text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "/") }
        if text.contains("/") || looksNumeric {
            do throws(NetworkParseError) {
                return .ipv4(try IPv4Network(parsing: text))
            } catch {
                throw failure(error.description)
            }
        }
        let name = HostName.normalised(text)
        if let problem = HostName.problem(with: name) { throw failure(problem) }
        return .hostName(name)
    }
}
