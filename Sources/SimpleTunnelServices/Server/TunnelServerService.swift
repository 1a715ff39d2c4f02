import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

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
        onListening: @escaping @Sendable (TunnelServer) throws -> Void = { _ in }
    ) {
        self.metricsEndpoint = metricsEndpoint
        self.database = database
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
                handle = try ServerIPLayer.start(configuration: ipLayer.configuration, options: ipLayer.options, eventLoop: group.next(), metrics: settings.metrics, logger: logger)
                settings.ipLayer = handle?.layer
            } catch {
                if ipLayerIsRequired { throw IPLayerStartError(underlying: error) }
                logger.warning("IP layer off: \(error); IP tunnels will be refused (result 5)")
            }
        }
        defer { handle?.stop(logger: logger) }
        var metrics: LocalListener?
        if let metricsEndpoint {
            metrics = try await MetricsEndpoint.start(
                host: metricsEndpoint.endpoint.host, port: metricsEndpoint.endpoint.port,
                registry: metricsEndpoint.registry, group: group, logger: logger)
        }
        let server = try await TunnelServer.start(settings: settings, group: group, logger: logger)
        do {
            try onListening(server)
        } catch {
            await server.shutdown()
            await metrics?.close()
            throw error
        }
        // Serve until asked to stop, or until the listener dies on its own.
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            Task { await server.shutdown() }
        }
        await server.shutdown()
        await metrics?.close()
    }
}

/// The IP layer asked for with `--tun` could not be set up.
public struct IPLayerStartError: Error, CustomStringConvertible {
    public let underlying: any Error
    public var description: String {
        "cannot set up the IP layer asked for with --tun: \(underlying) (it needs root or CAP_NET_ADMIN and /dev/net/tun; without --tun the server runs without one)"
    }
}
