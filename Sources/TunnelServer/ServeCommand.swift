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

    /// Everything the launch reads, at start and on every reload.
    @OptionGroup var options: TunnelServerLaunchOptions

    /// What only a serving process does with: metrics, logs, the control socket, the user it becomes.
    @OptionGroup var process: ServeProcessOptions

    func validate() throws {
        try process.check()
    }

    /// Before installing, the client is `swift run tunnel-client`.
    static var runsFromBuildFolder: Bool {
        CommandLine.arguments.first.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path.contains("/.build/") } ?? false
    }

    /// Settings merged from defaults, the file and `options`; clients take the device's MTU from the lease (IPv4.MTU, PROTOCOL.md A5).
    static func prepareLaunch(
        _ options: TunnelServerLaunchOptions, openSharedStore: @escaping SharedServerStoreOpener, loadedUsers: UsersFile? = nil,
        listeningOn: String? = nil, openFileLimit: Int, logger: Logger
    ) throws -> TunnelServerLaunch {
        try TunnelServerLaunch.prepare(
            options, openSharedStore: openSharedStore, loadedUsers: loadedUsers, listeningOn: listeningOn,
            resolvConf: ResolverConfiguration.readSystemResolvConf(), openFileLimit: openFileLimit, logger: logger)
    }

    func run() async throws {
        let logLevel = process.logLevel
        let metrics = process.metrics, control = process.control, runAs = process.runAs
        LoggingSystem.bootstrap { label in
            var handler = JournalLogHandler(label: label)
            handler.logLevel = logLevel
            return handler
        }
        let logger = Logger(label: "tunnel-server")

        let options = self.options

        // Every tunnel and flow is a descriptor; the usual soft limit of 1024 is far too few.
        let openFiles = OpenFileLimit.raiseSoftLimitToHardLimit()
        if let openFiles {
            logger.info("open-file limit \(openFiles.after.soft)", metadata: ["was": "\(openFiles.before.soft)", "hard": "\(openFiles.after.hard)"])
        }
        let launch: TunnelServerLaunch
        do {
            launch = try Self.prepareLaunch(options, openSharedStore: TunnelDatabase.opener, openFileLimit: openFiles?.after.soft ?? 1024, logger: logger)
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
            settings.metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry), perLogin: process.metricsPerLogin)
            metricsEndpoint = (endpoint, registry)
        }
        let identity = launch.selfSignedIdentity
        let account = try runAs.map { name throws(PrivilegeError) in try Privileges.account(named: name) }
        if launch.ipLayer == nil && !options.noIPLayer {
            logger.notice("no IP layer (IP tunnels are refused): give --tun, or a --config with an IPv4 pool, to start one")
        }
        let leaseFile = launch.ipLayer?.options.leaseFile
        // Checked as the user it serves as (after --run-as): the folder it writes to while serving must take a file now,
        // rather than leases be found lost after a restart.
        let checkStateFolder = { @Sendable () throws in
            guard let leaseFile else { return }
            do {
                try StateFolder.checkWritable((leaseFile.path as NSString).deletingLastPathComponent)
            } catch {
                logger.critical("cannot start: \(error)")
                throw ExitCode(2)
            }
        }
        if account == nil { try checkStateFolder() }
        let useIPLayer = launch.ipLayer != nil
        // A reload reads the same files with the same command line, and keeps the open database.
        let openedDatabase = launch.database
        let reopen: SharedServerStoreOpener = { url, passwordFile, environment, logger in
            try openedDatabase ?? TunnelDatabase.opener(url, passwordFile, environment, logger)
        }
        let openFileLimit = openFiles?.after.soft ?? 1024
        // Read for the address the server keeps listening on, whatever the file now names: the safety rules follow the real listener.
        let listener = launch.settings.host
        let reload = ConfigurationReload(running: launch) {
            try Self.prepareLaunch(
                options, openSharedStore: reopen, loadedUsers: launch.usersFile, listeningOn: listener, openFileLimit: openFileLimit, logger: logger)
        }
        let service = TunnelServerService(
            settings: settings, group: MultiThreadedEventLoopGroup.singleton, logger: logger,
            ipLayer: launch.ipLayer.map { (launch.configuration, $0.options) }, ipLayerIsRequired: launch.ipLayer?.isRequired ?? false,
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
                    runFromBuildFolder: Self.runsFromBuildFolder, offersIPLayer: useIPLayer)
                logger.notice("connect with: \(hint.command)\(hint.ipCommand.map { ", or for a full tunnel: \($0)" } ?? "")\(hint.note.map { " (\($0))" } ?? "")")
            } else if launch.settings.tls == nil {
                let hint = ClientCommandHint.make(
                    pinSHA256: nil, listenHost: launch.settings.host, port: server.localAddress.port ?? 0,
                    requiresLogin: launch.settings.authentication != nil, interfaceAddresses: LocalInterfaceAddresses.systemAddresses(),
                    runFromBuildFolder: Self.runsFromBuildFolder, offersIPLayer: useIPLayer)
                logger.notice("connect with: \(hint.command)\(hint.ipCommand.map { ", or for a full tunnel: \($0)" } ?? ""), or Apple's sample app with server address \(hint.server)\(hint.note.map { " (\($0))" } ?? "")")
            }
            if let account {
                // Undoing the TUN device's settings needs CAP_NET_ADMIN; without an IP layer nothing is kept.
                try Privileges.drop(to: account, keeping: useIPLayer ? [.netAdmin] : [])
                logger.notice("running as \(account.name) (uid \(account.uid))\(useIPLayer ? ", keeping CAP_NET_ADMIN for the TUN device's settings" : "")")
                try checkStateFolder()
            }
        }
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }
}
