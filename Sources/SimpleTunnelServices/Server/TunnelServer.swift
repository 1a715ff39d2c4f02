import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Accepts tunnels on a TCP listener (TLS unless told otherwise) and serves
/// each with its own multiplexer on one event loop, opening real sockets for
/// the flows its client asks for.
public final class TunnelServer: Sendable {
    public struct Settings: Sendable {
        public var host = "127.0.0.1"
        public var port = 4433
        /// Nil only for `--plaintext`, which Apple's stock sample app needs.
        public var tls: TLSContext?
        public var multiplexerLimits = TunnelMultiplexer.Limits()
        /// Bytes all tunnels together may hold for their peers.
        public var bufferBudget = ServerBufferBudget.forPhysicalMemory(SystemMemory.physicalBytes)
        public var maximumTunnels = 256
        /// Time a client has to finish TLS and send its first message.
        public var firstMessageTimeout: TimeAmount = .seconds(10)
        /// A tunnel silent for this long is closed (our clients probe every 15 s).
        public var liveness = LivenessMonitor.Policy.server
        public var opener = ServerFlowOpener.Settings()
        /// The configuration `fetchConfiguration` answers with (PROTOCOL.md A5).
        public var clientConfiguration: [String: PropertyListValue] = [:]
        public var dns = DNSForwarder(resolver: nil)
        /// Counters for `--metrics`; nil records nothing.
        public var metrics: TunnelServerMetrics?
        /// Set: every tunnel must log in first (PROTOCOL.md B2).
        public var authentication: Authentication?

        public struct Authentication: Sendable {
            public var users: UserDatabase
            public var limiter: LoginRateLimiter

            public init(users: UserDatabase, limiter: LoginRateLimiter = LoginRateLimiter()) {
                self.users = users
                self.limiter = limiter
            }
        }

        public init() {}
    }

    private let channel: Channel
    private let tunnels: NIOLockedValueBox<[ObjectIdentifier: Channel]>
    private let shuttingDown = NIOLockedValueBox(false)
    public let localAddress: SocketAddress
    private let logger: Logger

    private init(channel: Channel, tunnels: NIOLockedValueBox<[ObjectIdentifier: Channel]>, logger: Logger) throws {
        self.channel = channel
        self.tunnels = tunnels
        self.logger = logger
        guard let address = channel.localAddress else {
            throw ChannelError.unknownLocalAddress
        }
        self.localAddress = address
    }

    /// Binds the listener and starts accepting tunnels.
    public static func start(settings: Settings, group: EventLoopGroup, logger: Logger) async throws -> TunnelServer {
        let tunnels = NIOLockedValueBox<[ObjectIdentifier: Channel]>([:])
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: LocalListener.backlog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.initializeTunnel(channel, settings: settings, tunnels: tunnels, logger: logger)
                }
            }
            .bind(host: settings.host, port: settings.port)
            .get()
        let server = try TunnelServer(channel: channel, tunnels: tunnels, logger: logger)
        logger.notice("listening on \(TunnelEndpoint(server.localAddress))", metadata: ["tls": "\(settings.tls != nil)"])
        return server
    }

    private static func initializeTunnel(
        _ channel: Channel,
        settings: Settings,
        tunnels: NIOLockedValueBox<[ObjectIdentifier: Channel]>,
        logger: Logger
    ) throws {
        var logger = logger
        logger[metadataKey: "peer"] = "\(channel.remoteAddress.map { TunnelEndpoint($0).description } ?? "unknown")"
        let admitted = tunnels.withLockedValue { tunnels -> Bool in
            guard tunnels.count < settings.maximumTunnels else { return false }
            tunnels[ObjectIdentifier(channel)] = channel
            return true
        }
        guard admitted else {
            logger.warning("refusing tunnel", metadata: ["reason": "the server already serves \(settings.maximumTunnels) tunnels"])
            channel.close(promise: nil)
            return
        }
        settings.metrics?.tunnels.increment()
        settings.metrics?.tunnelsOpened.increment()
        channel.closeFuture.whenComplete { _ in
            _ = tunnels.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) }
            settings.metrics?.tunnels.decrement()
        }
        try TunnelSocketOptions.apply(to: channel)
        let pipeline = channel.pipeline.syncOperations
        if let tls = settings.tls {
            try pipeline.addHandler(TLSHandler(context: tls, logger: logger))
        }
        try pipeline.addTunnelMessageCodec()
        let peer = TunnelPeer(channel: channel)
        if let authentication = settings.authentication {
            let source = channel.remoteAddress?.ipAddress ?? "unknown"
            try pipeline.addHandler(
                TunnelAuthenticationGate(
                    users: authentication.users, limiter: authentication.limiter, source: source, metrics: settings.metrics, peer: peer,
                    logger: logger))
        }
        let eventLoop = channel.eventLoop
        try pipeline.addHandler(
            TunnelChannelHandler(
                role: {
                    .server(
                        opener: ServerFlowOpener(eventLoop: eventLoop, settings: settings.opener, peer: peer, logger: logger),
                        responder: ServerRequestResponder(configuration: settings.clientConfiguration, dns: settings.dns, eventLoop: eventLoop)
                    )
                },
                limits: settings.multiplexerLimits,
                firstMessageTimeout: settings.firstMessageTimeout,
                liveness: settings.liveness,
                metrics: settings.metrics,
                serverBudget: settings.bufferBudget,
                logger: logger
            )
        )
        logger.info("tunnel connected")
    }

    /// Stops accepting, then closes every tunnel (TLS sends close_notify) and waits for them.
    public func shutdown() async {
        let first = shuttingDown.withLockedValue { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try? await channel.close()
        let open = tunnels.withLockedValue { Array($0.values) }
        logger.notice("shutting down", metadata: ["tunnels": "\(open.count)"])
        for tunnel in open {
            try? await tunnel.close()
        }
    }

    /// Completes when the listener closes.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}
