import NIOCore

/// The server's own settings, from the configuration's `Server` dictionary
/// (PROTOCOL.md B4); never sent to a client.
///
/// Every field is a `var`: `TunnelServerLaunch.prepare` merges the defaults,
/// then the file, then the command line's options into one value. Settings the
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
    /// The load balancers whose connections start with a PROXY v2 header (`Server.ProxyProtocolFrom`).
    public var proxyProtocolFrom: IPNetworkList?
    public var limits: Limits
    public var policy: DestinationPolicy
    /// `Server.ClientIsolation`: false lets IP-layer clients reach one another's leases; nil = the default, isolated.
    public var clientIsolation: Bool?
    /// `Server.Groups`, `Server.Users` and `Server.AppLayer`: who may do what.
    public var access = AccessRules.none

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

    /// `Server.Limits` as the file gives it (PROTOCOL.md B5): the checked value
    /// of each key present, by key. A key left out is absent, so it means what
    /// no configuration means: the flag, else the runtime's default
    /// (`ServerLimit.all` says which key sets what).
    public struct Limits: Sendable, Hashable, ExpressibleByDictionaryLiteral {
        public var values: [String: LimitValue]

        public init(_ values: [String: LimitValue] = [:]) {
            self.values = values
        }

        public init(dictionaryLiteral elements: (String, LimitValue)...) {
            self.init(Dictionary(uniqueKeysWithValues: elements))
        }

        public subscript(key: String) -> LimitValue? {
            get { values[key] }
            set { values[key] = newValue }
        }
    }
}
