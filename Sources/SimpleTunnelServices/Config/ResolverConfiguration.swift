/// The parts of `/etc/resolv.conf` a client needs, used when the
/// configuration has no `DNS` (PROTOCOL.md A5).
public enum ResolverConfiguration {
    public static let systemPath = "/etc/resolv.conf"

    /// Reads resolv.conf text:
    /// - `nameserver ADDRESS` lines give the servers, in order. Loopback and
    ///   unspecified addresses are skipped: a local stub resolver such as
    ///   systemd-resolved's 127.0.0.53 would point the client at itself.
    ///   Addresses that do not parse (for example with a `%zone`) are skipped too.
    /// - `search` and `domain` give the search domains; as in the C resolver,
    ///   the last such line wins.
    /// - `#` or `;` starts a comment, anywhere on a line.
    /// Returns nil when no usable server is left.
    public static func dnsSettings(fromResolvConf text: String) -> DNSSettings? {
        var servers: [IPAddress] = []
        var searchDomains: [String] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.prefix { $0 != "#" && $0 != ";" }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let keyword = words.first else { continue }
            let arguments = words.dropFirst()
            switch keyword {
            case "nameserver":
                guard let text = arguments.first, let address = IPAddress(text),
                      !address.isLoopback, !address.isUnspecified
                else { continue }
                servers.append(address)
            case "search":
                searchDomains = arguments.map(String.init)
            case "domain":
                searchDomains = arguments.first.map { [String($0)] } ?? []
            default:
                continue
            }
        }
        guard !servers.isEmpty else { return nil }
        return DNSSettings(servers: servers, searchDomains: searchDomains)
    }

    /// The loopback `nameserver` addresses of resolv.conf text, such as
    /// systemd-resolved's stub 127.0.0.53: skipped by `dnsSettings`, and worth
    /// telling the operator about when nothing else is left.
    public static func loopbackNameservers(inResolvConf text: String) -> [IPAddress] {
        text.split(whereSeparator: \.isNewline).compactMap { rawLine in
            let words = rawLine.prefix { $0 != "#" && $0 != ";" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.first == "nameserver", words.count > 1, let address = IPAddress(words[1]), address.isLoopback else { return nil }
            return address
        }
    }

    /// The text of `/etc/resolv.conf`, or nil when it cannot be read (the
    /// server then sends no DNS settings rather than failing to start).
    public static func readSystemResolvConf(path: String = systemPath) -> String? {
        guard let buffer = try? ConfigurationFileReader.contents(ofPath: path) else { return nil }
        return String(buffer: buffer)
    }
}
