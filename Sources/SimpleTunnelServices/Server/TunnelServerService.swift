import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Runs a `TunnelServer` in a `ServiceGroup`: binds, serves until graceful
/// shutdown (SIGINT, SIGTERM), then stops accepting and closes every tunnel.
public struct TunnelServerService: Service, CustomStringConvertible {
    public var description: String { "tunnel-server on \(settings.host):\(settings.port)" }

    private let settings: TunnelServer.Settings
    private let group: EventLoopGroup
    private let logger: Logger
    private let onListening: @Sendable (TunnelServer) throws -> Void
    private let ipLayer: (configuration: TunnelServerConfiguration, options: ServerIPLayerOptions)?
    private let metricsEndpoint: (endpoint: TunnelEndpoint, registry: PrometheusCollectorRegistry)?
    private let ipLayerIsRequired: Bool
    /// Shared with the other servers: connected and migrated before anything listens.
    private let database: (any SharedServerStore)?
    private let control: ControlSocketOptions?
    /// Read again on SIGHUP.
    private let usersFile: UsersFile?
    private let configurationReload: ConfigurationReload?

    /// Where the control socket listens, and who owns it once `--run-as` drops root.
    public struct ControlSocketOptions: Sendable {
        public var path: String
        public var owner: (uid: uid_t, gid: gid_t)?
        /// Given with --control: failing to listen stops the server. The default path only warns.
        public var isRequired: Bool

        public init(path: String, owner: (uid: uid_t, gid: gid_t)? = nil, isRequired: Bool = true) {
            self.path = path
            self.owner = owner
            self.isRequired = isRequired
        }
    }

    /// With `ipLayer`, the server brings up its TUN device first; when it
    /// cannot (not root, no /dev/net/tun), the server stops with that error if
    /// `ipLayerIsRequired` (an explicit `--tun`, as OpenVPN and wg-quick do),
    /// else the IP layer is off, said in the log, and IP opens get result 5. `onListening` runs once everything is
    /// bound (where `--run-as` drops privileges); an error from it stops the server.
    public init(
        settings: TunnelServer.Settings,
        group: EventLoopGroup,
        logger: Logger,
        ipLayer: (configuration: TunnelServerConfiguration, options: ServerIPLayerOptions)? = nil,
        ipLayerIsRequired: Bool = false,
        metricsEndpoint: (endpoint: TunnelEndpoint, registry: PrometheusCollectorRegistry)? = nil,
        database: (any SharedServerStore)? = nil,
        control: ControlSocketOptions? = nil,
        usersFile: UsersFile? = nil,
        configurationReload: ConfigurationReload? = nil,
        onListening: @escaping @Sendable (TunnelServer) throws -> Void = { _ in }
    ) {
        self.metricsEndpoint = metricsEndpoint
        self.database = database
        self.control = control
        self.usersFile = usersFile
        self.configurationReload = configurationReload
        self.settings = settings
        self.group = group
        self.logger = logger
        self.ipLayer = ipLayer
        self.ipLayerIsRequired = ipLayerIsRequired
        self.onListening = onListening
    }

    public func run() async throws {
        guard let database else { return try await serve() }
        let pool = Task { await database.run() }
        defer { pool.cancel() }
        do {
            try await database.prepare()
        } catch {
            logger.critical("cannot start: \(error)", metadata: ["database": "\(database)"])
            throw error
        }
        logger.notice("sharing logins, leases and sessions in \(database)", metadata: ["server": "\(database.serverID)"])
        try await serve()
    }

    private func serve() async throws {
        var settings = self.settings
        var handle: ServerIPLayerHandle?
        if let ipLayer {
            do {
                handle = try ServerIPLayer.start(configuration: ipLayer.configuration, options: ipLayer.options, metrics: settings.metrics, logger: logger)
                settings.ipLayer = handle?.layer
            } catch {
                if ipLayerIsRequired { throw IPLayerStartError(underlying: error) }
                logger.warning("IP layer off: \(error); IP tunnels will be refused (result 5)")
            }
        }
        defer { handle?.stop(logger: logger) }
        var metrics: LocalListener?
        // The certificate served now (a reload may read a renewed one); the server starts after the metrics.
        let serving = NIOLockedValueBox<TunnelServer?>(nil)
        let initialTLS = settings.tls
        if let metricsEndpoint {
            let database = self.database
            metrics = try await MetricsEndpoint.start(
                host: metricsEndpoint.endpoint.host, port: metricsEndpoint.endpoint.port,
                registry: metricsEndpoint.registry, group: group, logger: logger,
                certificateExpiry: { (serving.withLockedValue { $0 }?.servingSettings.tls ?? initialTLS)?.expiry },
                databaseAnswers: { database.map { $0.unavailability == nil } })
        }
        // Trapped before anything listens: a SIGHUP from then on reloads and never ends the server.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let server = try await TunnelServer.start(settings: settings, group: group, logger: logger)
        serving.withLockedValue { $0 = server }
        if let database {
            server.addStatusWarnings { database.unavailability.map { [$0] } ?? [] }
        }
        server.logCertificateWarnings()
        database?.whenLoginRemoved { [logger] login in
            let ended = server.endTunnels(ofLogin: login)
            logger.notice("login removed from the database", metadata: ["login": "\(PeerText.quoted(login, limit: 64))", "tunnels-ended": "\(ended)"])
        }
        let reloader = ServerReloader(
            server: server, usersFile: usersFile, configuration: configurationReload, ipLayer: settings.ipLayer, logger: logger)
        var controlSocket: ControlSocketServer?
        do {
            // Before onListening drops root: /run is root's, and the socket is handed to the service user.
            if let control {
                do {
                    controlSocket = try await ServerControl.start(
                        path: control.path, server: server, reloader: reloader, owner: control.owner, group: group, logger: logger)
                } catch where !control.isRequired {
                    logger.warning("no control socket (status and kick will not answer): \(error); give --control PATH")
                }
            }
            try onListening(server)
        } catch {
            await server.shutdown()
            await controlSocket?.close()
            await metrics?.close()
            throw error
        }
        let reloads = Task {
            for await _ in hangups { _ = reloader.reload() }
        }
        // A certificate nears its end on a server no one reloads: said again each day.
        let certificateChecks = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(86_400))
                if !Task.isCancelled { server.logCertificateWarnings() }
            }
        }
        // Each login's usage, handed to its store at a bounded rate (and at stop, by `shutdown`).
        let usageFlushes = Task {
            let interval = server.servingSettings.usageFlushInterval
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if !Task.isCancelled { await server.flushUsage() }
            }
        }
        // Serve until asked to stop, or until the listener dies on its own.
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            Task { await server.shutdown() }
        }
        reloads.cancel()
        certificateChecks.cancel()
        usageFlushes.cancel()
        await server.shutdown()
        await controlSocket?.close()
        await metrics?.close()
    }
}

/// How the server reads its settings again on SIGHUP: the launch it runs
/// with, and the same merge of defaults, file and command line that made it.
public struct ConfigurationReload: Sendable {
    public var running: TunnelServerLaunch
    public var reread: @Sendable () throws -> TunnelServerLaunch

    public init(running: TunnelServerLaunch, reread: @escaping @Sendable () throws -> TunnelServerLaunch) {
        self.running = running
        self.reread = reread
    }
}

/// The IP layer asked for with `--tun` could not be set up.
public struct IPLayerStartError: Error, CustomStringConvertible {
    public let underlying: any Error
    public var description: String {
        "cannot set up the IP layer asked for with --tun: \(underlying) (it needs root or CAP_NET_ADMIN and /dev/net/tun; without --tun the server runs without one)"
    }
}
