import NIOCore

/// The server's own settings, from the configuration's `Server` dictionary
/// (PROTOCOL.md B4); never sent to a client.
///
/// Every field is a `var` so the command line can override what the file
/// says: load the file, then assign the flags that were given. Settings the
/// file may leave out and that only the command knows how to default
/// (`listenAddress`, `port`, the TLS files) are optional here.
public struct TunnelServerSettings: Sendable, Hashable {
    /// Address to listen on (`Server.ListenAddress`); nil = the command's default.
    public var listenAddress: String?
    /// TCP port (`Server.Port`, 0 = any free port); nil = the command's default.
    public var port: Int?
    /// PEM files (`Server.Certificate`, `PrivateKey`, `ClientCA`). A relative
    /// path in the file is taken relative to the configuration file's folder.
    public var certificatePath: String?
    public var privateKeyPath: String?
    /// CA bundle for verifying client certificates; set = mutual TLS.
    public var clientCAPath: String?
    /// The database several servers share (`Server.Database`, postgres://USER@HOST:PORT/DB) and its password file
    /// (`Server.DatabasePasswordFile`); nil = users file and lease file of this server alone.
    public var databaseURL: String?
    public var databasePasswordFilePath: String?
    public var limits: Limits
    public var policy: DestinationPolicy

    public init(
        listenAddress: String? = nil,
        port: Int? = nil,
        certificatePath: String? = nil,
        privateKeyPath: String? = nil,
        clientCAPath: String? = nil,
        limits: Limits = Limits(),
        policy: DestinationPolicy = .allowAll
    ) {
        self.listenAddress = listenAddress
        self.port = port
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.clientCAPath = clientCAPath
        self.limits = limits
        self.policy = policy
    }

    /// `Server.Limits`: bounds on what clients may make the server hold (PROTOCOL.md B5).
    public struct Limits: Sendable, Hashable {
        /// Open flows of any kind in one tunnel (`FlowsPerTunnel`).
        public var flowsPerTunnel: Int
        /// Concurrent tunnels on the server (`Tunnels`).
        public var tunnels: Int
        /// Time for a client to finish TLS and send its first message (`FirstMessageTimeout`).
        public var firstMessageTimeout: Duration {
            get { configuredFirstMessageTimeout ?? Self.defaultFirstMessageTimeout }
            set { configuredFirstMessageTimeout = newValue }
        }
        /// `FirstMessageTimeout` as the file gives it; nil = left out, so the mode's
        /// default applies (minutes with `--plaintext`, see `TunnelServerLaunch`).
        public var configuredFirstMessageTimeout: Duration?
        public static let defaultFirstMessageTimeout: Duration = .nanoseconds(TunnelServer.Settings().firstMessageTimeout.nanoseconds)
        /// Time to connect to a TCP flow's destination (`ConnectTimeout`).
        public var connectTimeout: Duration
        /// A UDP flow with no datagram either way for this long is closed (`UDPIdleTimeout`).
        public var udpIdleTimeout: Duration
        /// UDP flows in one tunnel, each holding a socket (`UDPFlowsPerTunnel`).
        public var udpFlowsPerTunnel: Int
        /// Flow sockets of all tunnels together (`FlowSockets`); nil = what the
        /// open-file limit leaves (see `FlowSocketBudget`), which also caps a value given.
        public var flowSockets: Int?
        /// How long a closed TCP flow's unsent data may drain before the socket is reset (`FlowDrainTimeout`).
        public var flowDrainTimeout: Duration
        /// MiB one tunnel may queue for its client over all its flows (`TunnelBufferMiB`).
        public var tunnelBufferMiB = TunnelMultiplexer.Limits().tunnelBufferBudget >> 20
        /// MiB of early data one tunnel may hold for flows still connecting (`EarlyDataMiB`).
        public var earlyDataMiB = TunnelMultiplexer.Limits().tunnelEarlyDataBudget >> 20
        /// MiB all tunnels together may hold for their clients (`ServerBufferMiB`); nil = a quarter of RAM, at most 1 GiB.
        public var serverBufferMiB: Int?
        /// Connections not yet past TLS and login: random early drop from START, all at FULL (`Startups`, "START:RATE:FULL").
        public var startups = AdmissionControl.Limits().startups
        /// Unauthenticated connections from one address, an IPv6 /64 counting as one (`StartupsPerAddress`).
        public var startupsPerAddress = AdmissionControl.Limits().startupsPerAddress
        /// Time for a client to finish the TLS handshake (`TLSHandshakeTimeout`).
        public var tlsHandshakeTimeout: Duration = .nanoseconds(TunnelServer.Settings().tlsHandshakeTimeout.nanoseconds)
        /// Password checks hashing at once (`LoginChecks`), and running or waiting from one address (`LoginChecksPerAddress`).
        public var loginChecks = PasswordCheckLimits().concurrent
        public var loginChecksPerAddress = PasswordCheckLimits().perSource
        /// Failed logins from one address within a minute before it is refused unchecked (`LoginFailures`).
        public var loginFailures = LoginRateLimiter().maximumFailures

        /// Defaults are the runtime's own, so a key left out means what no configuration means.
        public init(
            flowsPerTunnel: Int = TunnelMultiplexer.Limits().maximumFlows,
            tunnels: Int = TunnelServer.Settings().maximumTunnels,
            firstMessageTimeout: Duration? = nil,
            connectTimeout: Duration = .nanoseconds(ServerFlowOpener.Settings().connectTimeout.nanoseconds),
            udpIdleTimeout: Duration = .nanoseconds(TunnelMultiplexer.Limits().udpIdleTimeout.nanoseconds),
            udpFlowsPerTunnel: Int = TunnelMultiplexer.Limits().maximumUDPFlows,
            flowSockets: Int? = nil,
            flowDrainTimeout: Duration = .nanoseconds(StreamFlowEndpoint.defaultDrainTimeout.nanoseconds)
        ) {
            self.flowsPerTunnel = flowsPerTunnel
            self.tunnels = tunnels
            self.configuredFirstMessageTimeout = firstMessageTimeout
            self.connectTimeout = connectTimeout
            self.udpIdleTimeout = udpIdleTimeout
            self.udpFlowsPerTunnel = udpFlowsPerTunnel
            self.flowSockets = flowSockets
            self.flowDrainTimeout = flowDrainTimeout
        }
    }
}
