extension TunnelServerLaunch {
    /// Said at start when clients will be told no DNS servers because the
    /// configuration names none and the host's resolv.conf names only a
    /// resolver on its own loopback (systemd-resolved's 127.0.0.53, say),
    /// which a client would take as its own loopback.
    static func dnsHint(_ configuration: TunnelServerConfiguration, resolvConf: String?) -> [String] {
        guard configuration.dns == nil, let resolvConf else { return [] }
        let loopback = ResolverConfiguration.loopbackNameservers(inResolvConf: resolvConf)
        guard !loopback.isEmpty else { return [] }
        let names = loopback.map(\.description).joined(separator: ", ")
        return [
            "clients are sent no DNS servers: the configuration has no DNS, and \(ResolverConfiguration.systemPath) names only "
                + "\(names) on this machine's loopback, which clients cannot use. Name the servers clients should use in the --config file: "
                + "<key>DNS</key><dict><key>Servers</key><array><string>ADDRESS</string></array></dict> "
                + "(`resolvectl dns` shows the ones this machine forwards to)"
        ]
    }
}
