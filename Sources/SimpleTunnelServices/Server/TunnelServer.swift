import Foundation
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
        /// Tunnels one login may hold at once; a login past it is refused (`TunnelsPerLogin`).
        public var tunnelsPerLogin = 16
        /// Time a client has to finish TLS and send its first message.
        public var firstMessageTimeout: TimeAmount = .seconds(10)
        /// A tunnel silent for this long is closed (our clients probe every 15 s).
        public var liveness = LivenessMonitor.Policy.server
        public var opener = ServerFlowOpener.Settings()
        /// Nil when the IP layer is off: IP opens then get result 5.
        public var ipLayer: ServerIPLayer?
        /// The configuration `fetchConfiguration` answers with (PROTOCOL.md A5).
        public var clientConfiguration: [String: PropertyListValue] = [:]
        public var dns = DNSForwarder(resolver: nil)
        /// Counters for `--metrics`; nil records nothing.
        public var metrics: TunnelServerMetrics?
        /// Set: every tunnel must log in first (PROTOCOL.md B2).
        public var authentication: Authentication?
        /// Connections not yet past TLS and login (`AdmissionControl`): random early drop between
        /// `start` and `full`, and at most `startupsPerAddress` from one address (an IPv6 /64).
        public var startups = AdmissionControl.Limits().startups
        public var startupsPerAddress = AdmissionControl.Limits().startupsPerAddress
        /// Time a client has to finish the TLS handshake. Two round trips and a
        /// signature take well under a second even across the world, with room
        /// for a lost packet or two (TCP retransmits after 1 s, then 2 s); half
        /// the first-message timeout, so idle sockets give their place back sooner.
        public var tlsHandshakeTimeout: TimeAmount = .seconds(5)
        /// The dice of early drops, uniform in 0..<100; tests fix it.
        public var startupsRoll: ConnectionAdmission.Roll = { Int.random(in: 0..<100) }
        /// Set: connections from addresses outside these networks are closed at accept, unread and
        /// counted (`--plaintext-clients`, what lets the stock sample app's plaintext tunnels off loopback).
        public var clientNetworks: IPNetworkList?
        /// Set: connections from these networks are load balancers' and start with a PROXY v2
        /// header naming the client (`--proxy-protocol-from`); the client's address is then the
        /// one admission, login limits, logs and `status` go by. Others send none, as without it.
        public var proxyProtocolFrom: IPNetworkList?
        /// Refusals a peer can cause are logged at most once per this interval, with counts.
        public var refusalLogInterval: TimeAmount = .seconds(10)
        /// Who may do what (`Server.Groups`, `Server.Users`, `Server.AppLayer`); a reload replaces it for open tunnels too.
        public var access = AccessRules.none
        /// How often open tunnels are checked for a login that expired meanwhile.
        public var expiryCheckInterval: TimeAmount = .milliseconds(250)
        /// Where each login's usage is kept across restarts (the state folder's `usage.json`, or the database).
        public var usageStore: any UsageStore = MemoryUsageStore()
        /// What the store is, for `tunnel-server usage`'s heading.
        public var usageStoreName = "memory only"
        /// How often the usage counted is handed to the store while serving: what a crash may lose.
        public var usageFlushInterval: Duration = .seconds(30)

        public struct Authentication: Sendable {
            /// The users file, or the database several servers share.
            public var users: any LoginDirectory
            public var limiter: LoginRateLimiter
            /// Runs the slow hashes within its limits; one per server.
            public var checker: PasswordChecker

            public init(users: any LoginDirectory, limiter: LoginRateLimiter = LoginRateLimiter(), checker: PasswordChecker = PasswordChecker()) {
                self.users = users
                self.limiter = limiter
                self.checker = checker
            }
        }

        var admissionLimits: AdmissionControl.Limits {
            var limits = AdmissionControl.Limits()
            limits.startups = startups
            limits.startupsPerAddress = startupsPerAddress
            limits.tunnels = maximumTunnels
            limits.clientNetworks = clientNetworks
            return limits
        }

        public init() {}
    }

    private let channel: Channel
    let tunnels: TunnelRegistry
    /// What each new connection is served with; a reload replaces it.
    let live: NIOLockedValueBox<Settings>
    /// The destination rules every flow asks at open, old tunnels' too.
    private let authorizer: ReloadableAuthorizer
    private let statusWarnings = NIOLockedValueBox<[@Sendable () -> [String]]>([])
    /// The groups and users every tunnel asks, by its login, at each flow and packet.
    private let access: ServerAccess
    /// Ends the tunnels of logins that expire while open.
    private let expiryCheck: RepeatedTask
    /// The one shutdown: every caller awaits the same work.
    private let shutdownWork = NIOLockedValueBox<Task<Void, Never>?>(nil)
    public let localAddress: SocketAddress
    /// Which connections are taken; its counts say how many are unauthenticated and how many are tunnels.
    public let admission: ConnectionAdmission
    let logger: Logger
    /// While handing usage to its store fails, when that was last said (once a minute); nil while it works.
    let usageFlushFailed = NIOLockedValueBox<NIODeadline?>(nil)

    private init(
        channel: Channel, tunnels: TunnelRegistry, live: NIOLockedValueBox<Settings>, authorizer: ReloadableAuthorizer, access: ServerAccess,
        admission: ConnectionAdmission, logger: Logger
    ) throws {
        self.channel = channel
        self.live = live
        self.authorizer = authorizer
        self.access = access
        self.tunnels = tunnels
        self.admission = admission
        self.logger = logger
        guard let address = channel.localAddress else {
            throw ChannelError.unknownLocalAddress
        }
        self.localAddress = address
        let interval = live.withLockedValue { $0.expiryCheckInterval }
        self.expiryCheck = channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            _ = Self.endRefusedLogins(tunnels: tunnels, access: access, logger: logger, onlyIfExpiring: true)
        }
    }

    /// Binds the listener and starts accepting tunnels.
    public static func start(settings: Settings, group: EventLoopGroup, logger: Logger) async throws -> TunnelServer {
        var settings = settings
        let authorizer = ReloadableAuthorizer(settings.opener.authorizer)
        settings.opener.authorizer = authorizer
        let access = ServerAccess(settings.access)
        let live = NIOLockedValueBox(settings)
        let tunnels = TunnelRegistry(logger: logger)
        let admission = ConnectionAdmission(
            limits: settings.admissionLimits, roll: settings.startupsRoll, logInterval: settings.refusalLogInterval, metrics: settings.metrics,
            logger: logger)
        let loginRefusals = ThrottledRefusalLog<LoginRefusal>("refusing logins", interval: settings.refusalLogInterval, logger: logger)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: LocalListener.backlog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.initializeTunnel(
                        channel, settings: live.withLockedValue { $0 }, tunnels: tunnels, access: access, admission: admission, loginRefusals: loginRefusals,
                        logger: logger)
                }
            }
            .bind(host: settings.host, port: settings.port)
            .namingListenAddress(host: settings.host, port: settings.port)
            .get()
        let server = try TunnelServer(
            channel: channel, tunnels: tunnels, live: live, authorizer: authorizer, access: access, admission: admission, logger: logger)
        logger.notice("listening on \(TunnelEndpoint(server.localAddress))", metadata: ["tls": "\(settings.tls != nil)"])
        return server
    }

    private static func initializeTunnel(
        _ channel: Channel,
        settings: Settings,
        tunnels: TunnelRegistry,
        access: ServerAccess,
        admission: ConnectionAdmission,
        loginRefusals: ThrottledRefusalLog<LoginRefusal>,
        logger: Logger
    ) throws {
        let remote = channel.remoteAddress
        guard let balancers = settings.proxyProtocolFrom else {
            _ = try serve(channel, client: remote, settings: settings, tunnels: tunnels, access: access, admission: admission, loginRefusals: loginRefusals, logger: logger)
            return
        }
        // No peer address: the connection was gone before it was accepted (a balancer's health check
        // connects, says LOCAL and closes at once). There is no one to serve or to refuse.
        guard let address = remote.flatMap(IPAddress.init) else {
            channel.close(promise: nil)
            return
        }
        let pipeline = channel.pipeline.syncOperations
        guard balancers.contains(address) else {
            try pipeline.addHandler(UntrustedProxyHeaderDetector(admission: admission))
            _ = try serve(channel, client: remote, settings: settings, tunnels: tunnels, access: access, admission: admission, loginRefusals: loginRefusals, logger: logger)
            return
        }
        // A balancer's connection: who the client is, and so whether to admit it, is known once its header is read.
        // The header comes before TLS, so it shares the handshake's deadline (the first message's without TLS).
        try pipeline.addHandler(
            ProxyHeaderHandler(
                balancer: remote, timeout: settings.tls == nil ? settings.firstMessageTimeout : settings.tlsHandshakeTimeout, admission: admission
            ) { client, _ in
                try serve(channel, client: client, settings: settings, tunnels: tunnels, access: access, admission: admission, loginRefusals: loginRefusals, logger: logger)
            })
    }

    /// Sets up a connection for the client at `client` (the peer, or the one a balancer's header names)
    /// behind whatever is already in its pipeline; false when admission refused it (it is closing).
    private static func serve(
        _ channel: Channel,
        client: SocketAddress?,
        settings: Settings,
        tunnels: TunnelRegistry,
        access: ServerAccess,
        admission: ConnectionAdmission,
        loginRefusals: ThrottledRefusalLog<LoginRefusal>,
        logger: Logger
    ) throws -> Bool {
        // Refused before anything is set up: a flood costs an accept and a close each (logged and counted by `admission`).
        guard let ticket = admission.accept(from: client) else {
            channel.close(promise: nil)
            return false
        }
        var logger = logger
        logger[metadataKey: "peer"] = "\(client.map { TunnelEndpoint($0).description } ?? "unknown")"
        let peer = TunnelPeer(channel: channel, address: client)
        tunnels.add(peer)
        settings.metrics?.tunnels.increment()
        settings.metrics?.tunnelsOpened.increment()
        // Kept to read the tunnel's final counters once it closes: the pipeline has let go of its handlers by then.
        let tunnelHandler = NIOLoopBoundBox<TunnelChannelHandler?>(nil, eventLoop: channel.eventLoop)
        channel.closeFuture.whenComplete { _ in
            tunnels.remove(peer, final: tunnelHandler.value?.multiplexer?.currentStatistics ?? TunnelStatistics())
            admission.release(ticket)
            settings.metrics?.tunnels.decrement()
        }
        try TunnelSocketOptions.applyToServerTunnel(channel)
        let pipeline = channel.pipeline.syncOperations
        if let tls = settings.tls {
            try pipeline.addHandler(TLSHandler(context: tls, logger: logger))
        } else {
            try pipeline.addHandler(PlaintextTLSClientDetector())
        }
        try pipeline.addTunnelMessageCodec()
        if let authentication = settings.authentication {
            try pipeline.addHandler(
                TunnelAuthenticationGate(
                    users: authentication.users, limiter: authentication.limiter, checker: authentication.checker, refusals: loginRefusals,
                    source: ticket.group, metrics: settings.metrics, peer: peer, tunnels: tunnels,
                    claim: { [tunnelsPerLogin = settings.tunnelsPerLogin] login in
                        // The smallest of the server's per-login cap and the login's groups' Limits.Tunnels.
                        let cap = min(tunnelsPerLogin, access.profile(for: login).tunnels ?? .max)
                        return tunnels.logIn(peer, as: login, atMost: cap)
                    },
                    accessRefusal: { login in access.rules.loginRefusal(for: login) },
                    logger: logger))
        }
        try pipeline.addHandler(
            StartupAdmissionHandler(
                admission: admission, ticket: ticket, tlsHandshakeTimeout: settings.tls == nil ? nil : settings.tlsHandshakeTimeout,
                startupTimeout: settings.firstMessageTimeout, requiresLogin: settings.authentication != nil, logger: logger))
        let eventLoop = channel.eventLoop
        // This tunnel's flows meet the server's rules, then its login's groups' (asked at each open: a reload may move it).
        var opener = settings.opener
        opener.authorizer = LoginAuthorizer(base: settings.opener.authorizer, access: access, peer: peer)
        let handler = TunnelChannelHandler(
            role: {
                .server(
                    opener: ServerFlowOpener(
                        eventLoop: eventLoop, settings: opener, ipFlows: settings.ipLayer.map { TunnelIPFlows(layer: $0, peer: peer, access: access) },
                        appLayerRefusal: { access.profile(for: peer.currentLogin).appLayerRefusal },
                        logger: logger),
                    responder: ServerRequestResponder(configuration: settings.clientConfiguration, dns: settings.dns, eventLoop: eventLoop)
                )
            },
            limits: settings.multiplexerLimits,
            liveness: settings.liveness,
            metrics: settings.metrics,
            serverBudget: settings.bufferBudget,
            logger: logger
        )
        tunnelHandler.value = handler
        try pipeline.addHandler(handler)
        // Its payload counts against its login's traffic (and bandwidth limit) once it has logged in.
        handler.multiplexer?.trafficMeter = LoginTrafficMeter(traffic: access.traffic, peer: peer)
        logger.debug("connection accepted")
        return true
    }

    /// Stops accepting, then closes every tunnel (TLS sends close_notify) and
    /// waits for them. A second call, from another task, waits for the first's
    /// work instead of returning early: the process must not exit while
    /// tunnels are still being closed.
    public func shutdown() async {
        let work = shutdownWork.withLockedValue { work in
            if let work { return work }
            let started = Task { await self.closeEverything() }
            work = started
            return started
        }
        await work.value
    }

    private func closeEverything() async {
        expiryCheck.cancel()
        try? await channel.close()
        let open = tunnels.all
        logger.notice("shutting down", metadata: ["tunnels": "\(open.count)"])
        // All at once: each close waits for its close_notify to go out.
        let closes = open.map { $0.channel.close() }
        try? await EventLoopFuture.andAllComplete(closes, on: channel.eventLoop).get()
        await flushUsage()
    }

    /// The tunnels' connections now (for tests).
    var tunnelChannels: [Channel] { tunnels.all.map(\.channel) }

    /// Every tunnel now, with its counters from its event loop, and what the operator should act on.
    public func status() async -> TunnelServerStatus {
        var status = await tunnels.status()
        let rules = access.rules
        for index in status.tunnels.indices {
            guard let login = status.tunnels[index].login, let user = rules.users[login] else { continue }
            status.tunnels[index].groups = user.groups.isEmpty ? nil : user.groups
            let fixed = [user.ipv4Address?.description, user.ipv6Address?.description].compactMap { $0 }
            status.tunnels[index].fixedAddress = fixed.isEmpty ? nil : fixed.joined(separator: " and ")
        }
        let warnings = certificateWarnings() + statusWarnings.withLockedValue { $0 }.flatMap { $0() }
        status.warnings = warnings.isEmpty ? nil : warnings
        return status
    }

    /// Told to `status` besides the certificate's (the shared database away, say).
    public func addStatusWarnings(_ source: @escaping @Sendable () -> [String]) {
        statusWarnings.withLockedValue { $0.append(source) }
    }

    /// The served certificate's end near or past, or a client CA expired (`CertificateExpiry`).
    public func certificateWarnings(now: Date = Date()) -> [String] {
        servingSettings.tls?.expiry.warnings(now: now) ?? []
    }

    /// Logs `certificateWarnings`: at start, after each reload and once a day.
    public func logCertificateWarnings() {
        for warning in certificateWarnings() {
            logger.warning("\(warning)")
        }
    }

    /// Ends the tunnels logged in as `login` (`tunnel-server kick`); how many.
    @discardableResult
    public func endTunnels(ofLogin login: String) -> Int {
        tunnels.end(loginMatching: { $0 == login })
    }

    /// Ends the tunnels whose login `users` no longer has (after a reload); how many.
    @discardableResult
    public func endTunnels(notIn users: UserDatabase) -> Int {
        tunnels.end(loginMatching: { users.users[$0] == nil })
    }

    /// Serves new connections with `reload.settings` from now on, and every
    /// tunnel's next flow with its destination rules. Tunnels already open keep
    /// their limits and the configuration they were given.
    public func apply(_ reload: ServerSettingsReload) {
        var settings = reload.settings
        let moved = settings.access.loginsWhoseFixedAddressChanged(from: access.rules)
        authorizer.replace(with: settings.opener.authorizer)
        settings.opener.authorizer = authorizer
        access.replace(with: settings.access)
        live.withLockedValue { $0 = settings }
        admission.update(limits: settings.admissionLimits)
        Self.endRefusedLogins(tunnels: tunnels, access: access, logger: logger, onlyIfExpiring: false)
        // Their address is the old one until they reconnect, which their client does when the tunnel ends.
        if !moved.isEmpty {
            let ended = tunnels.end(loginMatching: moved.contains, leasingOnly: true)
            logger.notice(
                "ending the IP tunnels of logins whose fixed address changed, so they reconnect to the new one",
                metadata: ["logins": "\(moved.sorted().map { PeerText.quoted($0) }.joined(separator: ","))", "tunnels-ended": "\(ended)"])
        }
    }

    /// The access rules open tunnels are judged by now.
    public var accessRules: AccessRules { access.rules }

    /// Ends the tunnels of logins now disabled or expired; how many. `onlyIfExpiring`: skipped
    /// outright when no login has an expiry (the periodic check, which a server without one need not do).
    @discardableResult
    static func endRefusedLogins(tunnels: TunnelRegistry, access: ServerAccess, logger: Logger, onlyIfExpiring: Bool) -> Int {
        let rules = access.rules
        guard !rules.users.isEmpty, !onlyIfExpiring || rules.hasExpiries else { return 0 }
        let now = Date()
        var ended: [String: LoginAccessRefusal] = [:]
        let count = tunnels.end(loginMatching: { login in
            guard let refusal = rules.loginRefusal(for: login, now: now) else { return false }
            ended[login] = refusal
            return true
        })
        for (login, refusal) in ended.sorted(by: { $0.key < $1.key }) {
            logger.notice("ending the tunnels of a login no longer allowed", metadata: ["login": "\(PeerText.quoted(login))", "reason": "\(refusal)"])
        }
        return count
    }

    /// What new connections are served with now. It alone holds the objects a
    /// reload hands on (the IP layer, the metrics, the logins, the budgets): a
    /// launch value never held the ones made after it, such as the IP layer.
    public var servingSettings: Settings { live.withLockedValue { $0 } }

    /// Completes when the listener closes.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}
