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
        let kept = ReloadAspect.Running(serving: serving, launch: running)
        var target = ReloadAspect.Target(settings: reread.settings, configuration: reread.configuration)
        for aspect in Self.aspects {
            aspect.keep?(kept, &target)
        }
        for object in Self.runningObjects {
            object(kept, &target)
        }
        self.settings = target.settings
        self.policy = reread.policy
        self.configuration = target.configuration
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
        // The IP layer runs as it started (device, pools, isolation), so a change is named until a restart.
        launch.ipLayer = running.ipLayer
        return launch
    }

    /// Every setting a reload can find changed: the ones below, then each limit
    /// (`ServerLimit.all`). A new setting other than a limit is added here once.
    static let aspects: [ReloadAspect] = settingAspects + ServerLimit.all.map(ReloadAspect.init(limit:))

    private static let settingAspects: [ReloadAspect] = [
        // What the files ask for: the server keeps listening where it started, and derives its safety rules from that.
        .untilRestart("listen address", keep: { $1.settings.host = $0.serving.host }) { $0.askedListenAddress },
        .untilRestart("listen port", keep: { $1.settings.port = $0.serving.port }) {
            $0.settings.port == 0 ? "any free port" : "\($0.settings.port)"
        },
        // Turning TLS on or off waits for a restart; a renewed certificate is taken live.
        .untilRestart("TLS", keep: { running, target in
            if (running.serving.tls == nil) != (target.settings.tls == nil) { target.settings.tls = running.serving.tls }
        }) { $0.settings.tls == nil ? "off (--plaintext)" : "on" },
        .untilRestart("plaintext clients", keep: { $1.settings.clientNetworks = $0.serving.clientNetworks }) {
            $0.settings.clientNetworks.map { "\($0)" } ?? "any"
        },
        // Read at each connection: a balancer added or removed counts from the next one.
        .live("PROXY protocol balancers") { $0.settings.proxyProtocolFrom.map { "\($0)" } ?? "none" },
        .untilRestart("database", keep: { $1.configuration.server.databaseURL = $0.launch.configuration.server.databaseURL }) {
            $0.configuration.server.databaseURL ?? "none"
        },
        .untilRestart("IPv4 pool", keep: { running, target in
            target.configuration.pool = running.launch.configuration.pool
            target.configuration.poolIsConfigured = running.launch.configuration.poolIsConfigured
        }) { $0.configuration.poolIsConfigured ? "\($0.configuration.pool.lowerBound)-\($0.configuration.pool.upperBound)" : "none" },
        .untilRestart("IPv6 pool", keep: { $1.configuration.ipv6Pool = $0.launch.configuration.ipv6Pool }) { launch in
            launch.configuration.ipv6Pool.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "none"
        },
        // The running IP layer (its device, leases and isolation) stays whole until a restart.
        .untilRestart("client isolation", keep: { $1.settings.ipLayer = $0.serving.ipLayer }) { launch in
            launch.ipLayer.map { $0.options.clientIsolation ? "on" : "off (--client-to-client)" } ?? "no IP layer"
        },
        .live("destination policy") { launch in
            let allow = launch.policy.allowRules.map(\.text), deny = launch.policy.denyRules.map(\.text)
            let defaults = launch.policy.defaultDenyRules.map(\.text)
            // The public listener's default denials are named too, so that a change to them shows.
            return "allow [\(allow.joined(separator: ", "))] deny [\(deny.joined(separator: ", "))]"
                + (defaults.isEmpty ? "" : " default deny [\(defaults.joined(separator: ", "))]")
        },
        .live(
            "pushed configuration",
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

    /// What a running server made and a reload never replaces, though no
    /// operator setting names it: the logins (`reloadUsers` reads them again),
    /// the DNS forwarder, the metrics, the admission's dice and log pace, and
    /// the usage store (this run's counts go there; the launch reads it at start only).
    private static let runningObjects: [@Sendable (ReloadAspect.Running, inout ReloadAspect.Target) -> Void] = [
        { $1.settings.authentication = $0.serving.authentication },
        { $1.settings.usageStore = $0.serving.usageStore },
        { $1.settings.usageStoreName = $0.serving.usageStoreName },
        { $1.settings.usageFlushInterval = $0.serving.usageFlushInterval },
        { $1.settings.dns = $0.serving.dns },
        { $1.settings.metrics = $0.serving.metrics },
        { $1.settings.startupsRoll = $0.serving.startupsRoll },
        { $1.settings.refusalLogInterval = $0.serving.refusalLogInterval },
    ]
}
