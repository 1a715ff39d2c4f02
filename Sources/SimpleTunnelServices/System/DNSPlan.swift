/// How `tunnel-client ip --dns` uses the DNS settings a server pushes.
public enum DNSMode: String, Sendable, CaseIterable {
    /// `full` when the tunnel carries everything, else `split`.
    case auto
    /// Every name is asked of the tunnel's servers.
    case full
    /// Only names in the pushed domains are; the rest keep this machine's DNS.
    case split
    /// The pushed DNS settings are not applied.
    case off
}

/// The DNS settings to apply, decided once from the mode asked for, what the
/// server pushed and whether the tunnel carries everything. Applying it is
/// `LinuxNetworkConfigurator.setDNS`'s work.
public struct DNSPlan: Sendable, Equatable {
    public var servers: [IPAddress]
    /// Searched, and asked of `servers` (resolved's plain domains).
    public var searchDomains: [String]
    /// Asked of `servers` only, never searched (resolved's `~domain`).
    public var routingDomains: [String]
    /// Every name is asked of `servers` (resolved's `~.` and default route; a whole resolv.conf).
    public var carriesEverything: Bool

    public init(servers: [IPAddress], searchDomains: [String] = [], routingDomains: [String] = [], carriesEverything: Bool) {
        self.servers = servers
        self.searchDomains = searchDomains
        self.routingDomains = routingDomains
        self.carriesEverything = carriesEverything
    }

    /// Nil when nothing is to be applied: `off`, or a server that pushes no DNS servers.
    /// `MatchDomains` are searched too unless `MatchDomainsNoSearch`, as Apple's
    /// `NEDNSSettings` does; a match domain of "" matches every name.
    public static func decide(
        mode: DNSMode, servers: [IPAddress], searchDomains: [String], matchDomains: [String], matchDomainsNoSearch: Bool,
        tunnelCarriesEverything: Bool
    ) -> DNSPlan? {
        guard mode != .off, !servers.isEmpty else { return nil }
        let everything = mode == .full || (mode == .auto && tunnelCarriesEverything) || matchDomains.contains("")
        let matching = matchDomains.filter { !$0.isEmpty }
        var search = searchDomains
        var routing: [String] = []
        for domain in matching {
            if matchDomainsNoSearch {
                if !routing.contains(domain) { routing.append(domain) }
            } else if !search.contains(domain) {
                search.append(domain)
            }
        }
        return DNSPlan(servers: servers, searchDomains: search, routingDomains: routing, carriesEverything: everything)
    }

    /// resolved's domains for the link: search domains as they are, routing ones with `~`, and `~.` for everything.
    var resolvedDomains: [String] {
        searchDomains + routingDomains.map { "~" + $0 } + (carriesEverything ? ["~."] : [])
    }

    /// What a split tunnel's operator must know when this machine's DNS is a
    /// plain resolv.conf, which cannot send some names to some servers.
    var splitAdvice: String {
        let domains = searchDomains + routingDomains
        let servers = servers.map(\.description).joined(separator: ", ")
        let names = domains.isEmpty ? "no domain was pushed, so no name" : "names in \(domains.joined(separator: ", "))"
        return "the tunnel is split and this machine's DNS is a plain resolv.conf, which cannot send some names elsewhere: it was left alone "
            + "(\(names) would go to \(servers)). Use systemd-resolved for split DNS, or --dns full to send every name through the tunnel"
    }
}

/// What `setDNS` did.
public enum DNSApplied: Sendable, Equatable {
    /// Per-link servers and domains in systemd-resolved.
    case resolved
    /// The file's servers and search list replaced, until the tunnel closes.
    case resolvConf(path: String)
    /// Nothing changed, and why.
    case leftAlone(String)
}
