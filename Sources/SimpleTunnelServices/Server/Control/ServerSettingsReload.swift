/// What a SIGHUP does with the configuration read again: the settings a
/// running server can change without dropping anyone, and the ones it keeps
/// until a restart. Decided here, as a value; `TunnelServer.apply` does it.
///
/// The new settings come from the same merge as at start (defaults, then the
/// configuration file, then the command line, `TunnelServerLaunch.prepare`),
/// so a reload means exactly what a restart with the same files would, for
/// what it changes.
public struct ServerSettingsReload: Sendable {
    /// The settings to serve with from now on: the new ones, with what cannot
    /// change live (the listener, the shared budgets, logins) taken from the running server.
    public let settings: TunnelServer.Settings
    /// Destination rules and the pushed configuration (routes, DNS) for the IP layer.
    public let policy: DestinationPolicy
    public let configuration: TunnelServerConfiguration
    /// Changed and applied: "name: before → after".
    public let applied: [String]
    /// Changed in the files but kept as they were until a restart.
    public let needsRestart: [String]

    /// - Parameter serving: the settings the server serves with now
    ///   (`TunnelServer.servingSettings`), where what cannot change live is
    ///   taken from: the objects a running server made, never a launch's copy.
    public init(running: TunnelServerLaunch, serving: TunnelServer.Settings, reread: TunnelServerLaunch) {
        var applied: [String] = []
        var needsRestart: [String] = []
        for aspect in Self.aspects {
            let before = aspect.describe(running), after = aspect.describe(reread)
            guard before != after || aspect.differs(running, reread) else { continue }
            let line = "\(aspect.name): \(before) → \(after)"
            if aspect.isLive { applied.append(line) } else { needsRestart.append(line) }
        }
        applied += reread.settings.access.changes(from: running.settings.access)
        var settings = reread.settings
        let kept = serving
        settings.host = kept.host
        settings.port = kept.port
        settings.clientNetworks = kept.clientNetworks
        // The logins themselves (users file or database); `reloadUsers` reads them again.
        settings.authentication = kept.authentication
        settings.dns = kept.dns
        settings.ipLayer = kept.ipLayer
        settings.metrics = kept.metrics
        settings.startupsRoll = kept.startupsRoll
        settings.refusalLogInterval = kept.refusalLogInterval
        if (kept.tls == nil) != (reread.settings.tls == nil) { settings.tls = kept.tls }
        for limit in ServerLimit.all where !limit.isLive {
            limit.keep(kept, &settings)
        }
        self.settings = settings
        self.policy = reread.policy
        var configuration = reread.configuration
        configuration.pool = running.configuration.pool
        configuration.poolIsConfigured = running.configuration.poolIsConfigured
        configuration.ipv6Pool = running.configuration.ipv6Pool
        configuration.server.databaseURL = running.configuration.server.databaseURL
        self.configuration = configuration
        self.applied = applied
        self.needsRestart = needsRestart
    }

    /// The launch that now runs, for comparing with the next reload: what was
    /// kept is still the running one's, so it is named again until a restart.
    public func effective(running: TunnelServerLaunch, reread: TunnelServerLaunch) -> TunnelServerLaunch {
        var launch = reread
        launch.settings = settings
        launch.configuration = configuration
        launch.database = running.database
        launch.usersFile = running.usersFile
        launch.selfSignedIdentity = running.selfSignedIdentity
        launch.askedListenAddress = running.askedListenAddress
        return launch
    }

    /// One setting as the operator knows it, described so that two launches can be compared.
    struct Aspect: Sendable {
        let name: String
        let isLive: Bool
        let describe: @Sendable (TunnelServerLaunch) -> String
        /// For values whose description leaves something out.
        var differs: @Sendable (TunnelServerLaunch, TunnelServerLaunch) -> Bool = { _, _ in false }

        init(limit: ServerLimit) {
            self.init(name: limit.name, isLive: limit.isLive) { limit.describe($0.settings) }
        }

        init(
            name: String, isLive: Bool, differs: @escaping @Sendable (TunnelServerLaunch, TunnelServerLaunch) -> Bool = { _, _ in false },
            describe: @escaping @Sendable (TunnelServerLaunch) -> String
        ) {
            self.name = name
            self.isLive = isLive
            self.differs = differs
            self.describe = describe
        }
    }

    /// Every setting a reload can find changed: the ones below, then each limit
    /// (`ServerLimit.all`). A new setting other than a limit is added here once.
    static let aspects: [Aspect] = settingAspects + ServerLimit.all.map(Aspect.init(limit:))

    private static let settingAspects: [Aspect] = [
        // What the files ask for: the server keeps listening where it started, and derives its safety rules from that.
        Aspect(name: "listen address", isLive: false) { $0.askedListenAddress },
        Aspect(name: "listen port", isLive: false) { $0.settings.port == 0 ? "any free port" : "\($0.settings.port)" },
        Aspect(name: "TLS", isLive: false) { $0.settings.tls == nil ? "off (--plaintext)" : "on" },
        Aspect(name: "plaintext clients", isLive: false) { $0.settings.clientNetworks.map { "\($0)" } ?? "any" },
        // Read at each connection: a balancer added or removed counts from the next one.
        Aspect(name: "PROXY protocol balancers", isLive: true) { $0.settings.proxyProtocolFrom.map { "\($0)" } ?? "none" },
        Aspect(name: "database", isLive: false) { $0.configuration.server.databaseURL ?? "none" },
        Aspect(name: "IPv4 pool", isLive: false) {
            $0.configuration.poolIsConfigured ? "\($0.configuration.pool.lowerBound)-\($0.configuration.pool.upperBound)" : "none"
        },
        Aspect(name: "IPv6 pool", isLive: false) { launch in
            launch.configuration.ipv6Pool.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "none"
        },
        Aspect(name: "client isolation", isLive: false) { launch in
            launch.ipLayer.map { $0.options.clientIsolation ? "on" : "off (--client-to-client)" } ?? "no IP layer"
        },
        Aspect(name: "destination policy", isLive: true) { launch in
            let allow = launch.policy.allowRules.map(\.text), deny = launch.policy.denyRules.map(\.text)
            let defaults = launch.policy.defaultDenyRules.map(\.text)
            // The public listener's default denials are named too, so that a change to them shows.
            return "allow [\(allow.joined(separator: ", "))] deny [\(deny.joined(separator: ", "))]"
                + (defaults.isEmpty ? "" : " default deny [\(defaults.joined(separator: ", "))]")
        },
        Aspect(
            name: "pushed configuration", isLive: true,
            differs: { running, reread in
                let any = IPv4Address(0, 0, 0, 0)
                return running.settings.clientConfiguration != reread.settings.clientConfiguration
                    || running.configuration.configuration(forLease: any, ipv6: nil) != reread.configuration.configuration(forLease: any, ipv6: nil)
                    || running.configuration.ipv6Routes != reread.configuration.ipv6Routes
            }
        ) { launch in
            "routes \(launch.configuration.routes.map { $0.map(\.description).joined(separator: ", ") } ?? "everything"), "
                + (launch.configuration.ipv6Pool == nil ? "" : "IPv6 routes \(launch.configuration.ipv6Routes.map { $0.map(\.description).joined(separator: ", ") } ?? "everything"), ")
                + "DNS \(launch.configuration.dns.map { $0.servers.map(\.description).joined(separator: ", ") } ?? "none")"
        },
    ]
}
