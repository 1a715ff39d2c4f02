import ArgumentParser
import Foundation
import Logging
import NIOPosix
import Prometheus
import ServiceLifecycle
import SimpleTunnelDatabase
import SimpleTunnelServices

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve tunnels (the default subcommand).",
        discussion: """
            With no arguments it listens on 127.0.0.1:4433 with a generated self-signed \
            certificate (its SHA-256 fingerprint is printed with a ready-to-paste client command) \
            and the built-in configuration. Apple's form `tunnel-server <port> <config-file>` works too \
            (it means --port <port> --config <config-file>).
            """
    )

    @Option(help: "Address to listen on. Default 127.0.0.1.")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one. Default 4433.")
    var port: Int?

    @Option(help: "Server configuration property list (XML or binary, PROTOCOL.md A5).")
    var config: String?

    @Option(help: "PEM certificate chain. Without --cert/--key a self-signed certificate is generated and kept.")
    var cert: String?

    @Option(help: "PEM private key for --cert.")
    var key: String?

    @Option(name: .customLong("client-ca"), help: "Require client certificates issued by this PEM CA bundle (mutual TLS).")
    var clientCA: String?

    @Flag(help: "No TLS, for Apple's stock sample app: tunnels are neither encrypted nor authenticated. Off loopback it needs --plaintext-clients.")
    var plaintext = false

    @Option(
        name: .customLong("plaintext-clients"),
        help: "With --plaintext: the only networks that may connect, CIDR[,CIDR…] (e.g. 192.168.1.0/24,fd00:1::/64); others are closed unread.")
    var plaintextClients: String?

    @Option(help: "Users file (LOGIN:HASH lines, see `tunnel-server passwd`): every tunnel must log in first.")
    var users: String?

    @Option(help: "Share logins, leases and sessions with other servers in this PostgreSQL database: postgres://USER@HOST:PORT/DATABASE (no password here). Replaces --users and the lease file.")
    var database: String?

    @Option(name: .customLong("database-password-file"), help: "File whose first line is the database password (mode 0600); else $PGPASSWORD.")
    var databasePasswordFile: String?

    @Option(name: .customLong("state-directory"), help: "Where the generated certificate and the remembered tunnel addresses (leases.json) are kept. Default $XDG_STATE_HOME/simpletunnel.")
    var stateDirectory: String?

    @Option(help: "Allow only destinations matching this rule (TARGET[:PORTS], repeatable), e.g. 10.0.0.0/8:22,443 or *.example.com. On a public --host, an address rule also opens the server's loopback, link-local and metadata addresses, which are refused by default.")
    var allow: [String] = []

    @Option(help: "Refuse destinations matching this rule (repeatable); deny wins over allow.")
    var deny: [String] = []

    @Option(name: .customLong("max-tunnels"), help: "Tunnels served at once. Default 256.")
    var maximumTunnels: Int?

    @Option(name: .customLong("max-flows-per-tunnel"), help: "Flows one tunnel may hold. Default 4096.")
    var maximumFlowsPerTunnel: Int?

    @Option(name: .customLong("max-udp-flows-per-tunnel"), help: "UDP flows one tunnel may hold. Default 256.")
    var maximumUDPFlowsPerTunnel: Int?

    @Option(name: .customLong("first-message-timeout"), help: "Seconds a client has to finish TLS and send a message. Default 10; 300 with --plaintext.", transform: UserSeconds.positive)
    var firstMessageTimeout: Double?

    @Option(name: .customLong("max-startups"), help: "Connections not yet past TLS and login, as START:RATE:FULL: from START on, RATE% of new ones are dropped, rising to all at FULL. Default 64:30:256.")
    var startups: String?

    @Option(name: .customLong("max-startups-per-address"), help: "Connections not yet past TLS and login from one address (an IPv6 /64). Default 16.")
    var startupsPerAddress: Int?

    @Option(name: .customLong("tls-handshake-timeout"), help: "Seconds a client has to finish the TLS handshake. Default 5.", transform: UserSeconds.positive)
    var tlsHandshakeTimeout: Double?

    @Option(name: .customLong("max-login-checks"), help: "Password checks hashing at once; more wait their turn. Default 4.")
    var loginChecks: Int?

    @Option(name: .customLong("max-login-checks-per-address"), help: "Password checks running or waiting from one address (an IPv6 /64). Default 2.")
    var loginChecksPerAddress: Int?

    @Option(name: .customLong("max-login-failures"), help: "Failed logins from one address (an IPv6 /64) within a minute before it is refused unchecked. Default 5.")
    var loginFailures: Int?

    @Option(name: .customLong("connect-timeout"), help: "Seconds to connect to a destination. Default 10.", transform: UserSeconds.positive)
    var connectTimeout: Double?

    @Option(name: .customLong("udp-idle-timeout"), help: "Seconds after which an idle UDP flow closes. Default 60.", transform: UserSeconds.positive)
    var udpIdleTimeout: Double?

    @Option(
        name: .customLong("max-flow-sockets"),
        help: "Flow sockets of all tunnels together, draining ones included; one tunnel gets a quarter. Default: what the open-file limit leaves.")
    var maximumFlowSockets: Int?

    @Option(name: .customLong("flow-drain-timeout"), help: "Seconds a closed TCP flow's unsent data may drain before its socket is reset. Default 30.", transform: UserSeconds.positive)
    var flowDrainTimeout: Double?

    @Option(name: .customLong("tunnel-buffer-mib"), help: "MiB one tunnel may queue for its client; past it its flows stop reading. Default 8.")
    var tunnelBufferMiB: Int?

    @Option(name: .customLong("early-data-mib"), help: "MiB of data one tunnel may send for flows still connecting; past it it is not read. Default 4.")
    var earlyDataMiB: Int?

    @Option(
        name: .customLong("server-buffer-mib"),
        help: "MiB all tunnels together may hold for their clients; past it they pause. Default: a quarter of RAM, at most 1024.")
    var serverBufferMiB: Int?

    @Option(help: "Serve Prometheus metrics at http://ADDR:PORT/metrics (off by default).")
    var metrics: String?

    @Option(name: .customLong("idle-timeout"), help: "Seconds a tunnel with no open flow may stay silent before it is closed; 0 for never. Default 900.", transform: UserSeconds.zeroOrPositive)
    var idleTimeout: Double?

    @Option(help: "Start the IP layer on this TUN device (a name, or a pattern like stun%d); failing to set it up stops the server. Without --tun the IP layer starts only for a --config with an IPv4 pool, on stun%d.")
    var tun: String?

    @Option(
        name: .customLong("tun-address"),
        help: "The server's address on the TUN device, once per family (IPv4, IPv6). Default: the address just below each pool.")
    var tunAddress: [String] = []

    @Option(help: "MTU of the TUN device, also pushed to clients; at least 1280 when the configuration offers IPv6.")
    var mtu = 1400

    @Flag(name: .customLong("no-ip-layer"), help: "Do not create a TUN device; IP tunnels are refused (result 5).")
    var noIPLayer = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Control socket for `tunnel-server status` and `kick`, answered for root and the server's user only. Default: /run/simpletunnel/server.sock as root, else $XDG_RUNTIME_DIR/simpletunnel/server.sock or /tmp/simpletunnel-UID/server.sock.")
    var control: String?

    @Option(name: .customLong("run-as"), help: "Once the TUN device, routes and listeners are set up, become this user, keeping only CAP_NET_ADMIN (start as root).")
    var runAs: String?

    func validate() throws {
        if let metrics {
            do { _ = try TunnelEndpoint(parsing: metrics) } catch { throw ValidationError("--metrics \(error)") }
        }
        if let runAs {
            do { _ = try Privileges.account(named: runAs) } catch { throw ValidationError("\(error)") }
        }
        for address in tunAddress where IPv4Address(address) == nil && IPv6Address(address) == nil {
            throw ValidationError("--tun-address \(address): expected an IPv4 or IPv6 address")
        }
        if tunAddress.compactMap(IPv4Address.init).count > 1 || tunAddress.compactMap(IPv6Address.init).count > 1 {
            throw ValidationError("--tun-address: give at most one address of each family (one IPv4, one IPv6)")
        }
        guard (576...65535).contains(mtu) else {
            throw ValidationError("--mtu \(mtu): expected 576 to 65535")
        }
        if noIPLayer, tun != nil {
            throw ValidationError("--tun asks for the IP layer and --no-ip-layer turns it off: give one")
        }
    }

    /// Before installing, the client is `swift run tunnel-client`.
    static var runsFromBuildFolder: Bool {
        CommandLine.arguments.first.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path.contains("/.build/") } ?? false
    }

    /// The command line as the launch reads it, at start and on every reload.
    private func launchOptions() -> TunnelServerLaunchOptions {
        var options = TunnelServerLaunchOptions()
        options.host = host
        options.port = port
        options.configurationPath = config
        options.certificatePath = cert
        options.privateKeyPath = key
        options.clientCAPath = clientCA
        options.plaintext = plaintext
        options.plaintextClients = plaintextClients
        options.stateDirectory = stateDirectory
        options.allow = allow
        options.deny = deny
        options.maximumTunnels = maximumTunnels
        options.maximumFlowsPerTunnel = maximumFlowsPerTunnel
        options.maximumUDPFlowsPerTunnel = maximumUDPFlowsPerTunnel
        options.firstMessageTimeout = firstMessageTimeout
        options.connectTimeout = connectTimeout
        options.udpIdleTimeout = udpIdleTimeout
        options.usersPath = users
        options.idleTimeout = idleTimeout
        options.maximumFlowSockets = maximumFlowSockets
        options.flowDrainTimeout = flowDrainTimeout
        options.tunnelBufferMiB = tunnelBufferMiB
        options.earlyDataMiB = earlyDataMiB
        options.serverBufferMiB = serverBufferMiB
        options.startups = startups
        options.startupsPerAddress = startupsPerAddress
        options.tlsHandshakeTimeout = tlsHandshakeTimeout
        options.loginChecks = loginChecks
        options.loginChecksPerAddress = loginChecksPerAddress
        options.loginFailures = loginFailures
        options.databaseURL = database
        options.databasePasswordFile = databasePasswordFile
        options.openSharedStore = TunnelDatabase.opener

        return options
    }

    /// Settings merged from defaults, the file and `options`; clients take the device's MTU from the lease (IPv4.MTU, PROTOCOL.md A5).
    private static func prepareLaunch(_ options: TunnelServerLaunchOptions, mtu: Int, openFileLimit: Int, logger: Logger) throws -> TunnelServerLaunch {
        var launch = try TunnelServerLaunch.prepare(
            options, resolvConf: ResolverConfiguration.readSystemResolvConf(), openFileLimit: openFileLimit, logger: logger)
        launch.configuration.otherIPv4Keys["MTU"] = PropertyListValue(mtu)
        launch.configuration.otherIPv6Keys["MTU"] = PropertyListValue(mtu)
        return launch
    }

    func run() async throws {
        let logLevel = self.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            return handler
        }
        let logger = Logger(label: "tunnel-server")

        let options = launchOptions()

        // Every tunnel and flow is a descriptor; the usual soft limit of 1024 is far too few.
        let openFiles = OpenFileLimit.raiseSoftLimitToHardLimit()
        if let openFiles {
            logger.info("open-file limit \(openFiles.after.soft)", metadata: ["was": "\(openFiles.before.soft)", "hard": "\(openFiles.after.hard)"])
        }
        let launch: TunnelServerLaunch
        do {
            launch = try Self.prepareLaunch(options, mtu: mtu, openFileLimit: openFiles?.after.soft ?? 1024, logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(2)
        }
        logger.notice("\(launch.policyNote)")
        for warning in launch.warnings {
            logger.warning("\(warning)")
        }
        let budget = launch.settings.opener.socketBudget
        logger.info("flow sockets: at most \(budget.serverLimit), \(budget.tunnelShare) per tunnel")
        var settings = launch.settings
        var metricsEndpoint: (endpoint: TunnelEndpoint, registry: PrometheusCollectorRegistry)?
        if let metrics {
            let endpoint = try TunnelEndpoint(parsing: metrics)
            let registry = PrometheusCollectorRegistry()
            settings.metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
            metricsEndpoint = (endpoint, registry)
        }
        let identity = launch.selfSignedIdentity
        let account = try runAs.map { name throws(PrivilegeError) in try Privileges.account(named: name) }
        var ipOptions = ServerIPLayerOptions()
        ipOptions.deviceName = tun ?? "stun%d"
        ipOptions.deviceAddress = tunAddress.lazy.compactMap(IPv4Address.init).first
        ipOptions.deviceIPv6Address = tunAddress.lazy.compactMap(IPv6Address.init).first
        ipOptions.mtu = mtu
        ipOptions.destinationPolicy = launch.policy
        ipOptions.leaseFile = LeaseFile(path: (stateDirectory ?? SelfSignedIdentity.defaultDirectory()) + "/" + LeaseFile.defaultName)
        ipOptions.database = launch.database
        // The host's network changes only when asked: --tun, or a configuration file with a pool.
        let ipLayerAsked = tun != nil || (config != nil && launch.configuration.poolIsConfigured)
        let useIPLayer = ipLayerAsked && !noIPLayer
        if !useIPLayer && !noIPLayer {
            logger.notice("no IP layer (IP tunnels are refused): give --tun, or a --config with an IPv4 pool, to start one")
        }
        let leaseFile = useIPLayer && launch.database == nil ? ipOptions.leaseFile : nil
        // A reload reads the same files with the same command line, and keeps the open database.
        var rereadOptions = options
        if let database = launch.database {
            rereadOptions.openSharedStore = { _, _, _, _ in database }
        }
        let (mtu, openFileLimit) = (self.mtu, openFiles?.after.soft ?? 1024)
        let reload = ConfigurationReload(running: launch) { [rereadOptions] in
            try Self.prepareLaunch(rereadOptions, mtu: mtu, openFileLimit: openFileLimit, logger: logger)
        }
        let service = TunnelServerService(
            settings: settings, group: MultiThreadedEventLoopGroup.singleton, logger: logger,
            ipLayer: useIPLayer ? (launch.configuration, ipOptions) : nil, ipLayerIsRequired: tun != nil,
            metricsEndpoint: metricsEndpoint,
            database: launch.database,
            control: .init(
                path: control ?? ServerControlProtocol.defaultPath(), owner: account.map { (uid: $0.uid, gid: $0.gid) }, isRequired: control != nil),
            usersFile: launch.usersFile,
            configurationReload: reload
        ) { server in
            if let identity {
                let port = server.localAddress.port ?? 0
                logger.notice(
                    "self-signed certificate \(identity.wasCreated ? "created" : "loaded") in \(identity.directory), SHA-256 \(identity.sha256FingerprintHex)"
                )
                let hint = ClientCommandHint.make(
                    pinSHA256: identity.sha256FingerprintHex, listenHost: launch.settings.host, port: port,
                    requiresLogin: launch.settings.authentication != nil, interfaceAddresses: LocalInterfaceAddresses.systemAddresses(),
                    runFromBuildFolder: Self.runsFromBuildFolder)
                logger.notice("connect with: \(hint.command)\(hint.note.map { " (\($0))" } ?? "")")
            } else if launch.settings.tls == nil {
                let hint = ClientCommandHint.make(
                    pinSHA256: nil, listenHost: launch.settings.host, port: server.localAddress.port ?? 0,
                    requiresLogin: launch.settings.authentication != nil, interfaceAddresses: LocalInterfaceAddresses.systemAddresses(),
                    runFromBuildFolder: Self.runsFromBuildFolder)
                logger.notice("connect with: \(hint.command), or Apple's sample app with server address \(hint.server)\(hint.note.map { " (\($0))" } ?? "")")
            }
            if let account {
                // Undoing the TUN device's settings needs CAP_NET_ADMIN; without an IP layer nothing is kept.
                try Privileges.drop(to: account, keeping: useIPLayer ? [.netAdmin] : [])
                logger.notice("running as \(account.name) (uid \(account.uid))\(useIPLayer ? ", keeping CAP_NET_ADMIN for the TUN device's settings" : "")")
                if let leaseFile, access((leaseFile.path as NSString).deletingLastPathComponent, W_OK) != 0 {
                    logger.warning("\(account.name) cannot write \(leaseFile.path): leases will not survive a restart; give --state-directory a folder \(account.name) owns")
                }
            }
        }
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }
}
