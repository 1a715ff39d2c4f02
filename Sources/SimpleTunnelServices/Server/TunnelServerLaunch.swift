import NIOCore

/// What the command line says, before anything is decided; nil means "not given".
public struct TunnelServerLaunchOptions: Sendable {
    public var host: String?
    public var port: Int?
    public var configurationPath: String?
    public var certificatePath: String?
    public var privateKeyPath: String?
    public var clientCAPath: String?
    public var plaintext = false
    public var stateDirectory: String?
    public var allow: [String] = []
    public var deny: [String] = []
    public var maximumTunnels: Int?
    public var maximumFlowsPerTunnel: Int?
    public var maximumUDPFlowsPerTunnel: Int?
    public var firstMessageTimeout: Double?
    public var connectTimeout: Double?
    public var udpIdleTimeout: Double?
    /// A users file: tunnels must log in (PROTOCOL.md B2).
    public var usersPath: String?
    /// Seconds a tunnel may stay silent before it is closed; 0 = forever.
    public var idleTimeout: Double?
    /// `--max-startups START:RATE:FULL` and the other admission and login limits.
    public var startups: String?
    public var startupsPerAddress: Int?
    public var tlsHandshakeTimeout: Double?
    public var loginChecks: Int?
    public var loginChecksPerAddress: Int?
    public var loginFailures: Int?

    public init() {}

    public static let defaultHost = "127.0.0.1"
    public static let defaultPort = 4433
}

/// The server's settings decided from the command line, the configuration
/// file and the defaults (in that order of precedence), with the safety rules
/// checked: no open proxy on a public address, plaintext only on loopback.
public struct TunnelServerLaunch: Sendable {
    public var settings: TunnelServer.Settings
    public var configuration: TunnelServerConfiguration
    /// Set when the server presents its generated self-signed certificate.
    public var selfSignedIdentity: SelfSignedIdentity?
    /// Things to tell the operator at start.
    public var warnings: [String] = []

    public static func prepare(_ options: TunnelServerLaunchOptions, resolvConf: String?) throws -> TunnelServerLaunch {
        var configuration: TunnelServerConfiguration
        do {
            if let path = options.configurationPath {
                configuration = try TunnelServerConfiguration.load(contentsOf: path, resolvConf: resolvConf)
            } else {
                configuration = TunnelServerConfiguration.embeddedDefault.fillingMissingDNS(fromResolvConf: resolvConf)
            }
        } catch {
            throw TunnelServerLaunchError.configuration(error)
        }
        var server = configuration.server
        if !options.allow.isEmpty || !options.deny.isEmpty {
            do {
                let flags = try DestinationPolicy(allow: options.allow, deny: options.deny)
                server.policy = DestinationPolicy(
                    allowRules: server.policy.allowRules + flags.allowRules,
                    denyRules: server.policy.denyRules + flags.denyRules
                )
            } catch {
                throw TunnelServerLaunchError.policy(String(describing: error))
            }
        }

        var settings = TunnelServer.Settings()
        settings.host = options.host ?? server.listenAddress ?? TunnelServerLaunchOptions.defaultHost
        settings.port = options.port ?? server.port ?? TunnelServerLaunchOptions.defaultPort
        guard (0...65535).contains(settings.port) else {
            throw TunnelServerLaunchError.invalidOption("--port \(settings.port): expected 0 to 65535 (0 picks a free port)")
        }
        let limits = server.limits
        settings.maximumTunnels = try positive(options.maximumTunnels ?? limits.tunnels, "--max-tunnels")
        settings.multiplexerLimits.maximumFlows = try positive(options.maximumFlowsPerTunnel ?? limits.flowsPerTunnel, "--max-flows-per-tunnel")
        settings.multiplexerLimits.maximumUDPFlows = try positive(options.maximumUDPFlowsPerTunnel ?? limits.udpFlowsPerTunnel, "--max-udp-flows-per-tunnel")
        settings.firstMessageTimeout = try seconds(options.firstMessageTimeout, orElse: limits.firstMessageTimeout, "--first-message-timeout")
        settings.opener.connectTimeout = try seconds(options.connectTimeout, orElse: limits.connectTimeout, "--connect-timeout")
        settings.multiplexerLimits.udpIdleTimeout = try seconds(options.udpIdleTimeout, orElse: limits.udpIdleTimeout, "--udp-idle-timeout")
        try applyAdmissionLimits(options, limits, to: &settings)
        if let idle = options.idleTimeout {
            guard idle >= 0, idle.isFinite else { throw TunnelServerLaunchError.invalidOption("--idle-timeout \(idle): expected seconds, 0 for never") }
            settings.liveness.idleTimeout = idle == 0 ? nil : TimeAmount(seconds: idle)
        }
        settings.opener.authorizer = server.policy
        settings.clientConfiguration = configuration.configurationForFetch()
        settings.dns = DNSForwarder(resolver: resolvConf.flatMap(DNSForwarder.firstNameserver(inResolvConf:)))

        if let usersPath = options.usersPath {
            let users: UserDatabase
            do {
                users = try UserDatabase.load(path: usersPath)
            } catch {
                throw TunnelServerLaunchError.invalidOption("--users: \(error)")
            }
            var checks = PasswordCheckLimits()
            checks.concurrent = try positive(options.loginChecks ?? limits.loginChecks, "--max-login-checks")
            checks.perSource = try positive(options.loginChecksPerAddress ?? limits.loginChecksPerAddress, "--max-login-checks-per-address")
            let failures = try positive(options.loginFailures ?? limits.loginFailures, "--max-login-failures")
            settings.authentication = .init(
                users: users, limiter: LoginRateLimiter(maximumFailures: failures), checker: PasswordChecker(limits: checks))
        }
        var launch = TunnelServerLaunch(settings: settings, configuration: configuration)
        let clientCA = options.clientCAPath ?? server.clientCAPath
        let loopback = Self.isLoopback(settings.host)
        if options.plaintext {
            guard loopback else { throw TunnelServerLaunchError.plaintextOffLoopback(settings.host) }
            launch.warnings.append("--plaintext: the tunnel is not encrypted; use it only with Apple's stock sample app on this machine")
            return launch
        }
        guard loopback || clientCA != nil || settings.authentication != nil else {
            throw TunnelServerLaunchError.unauthenticatedPublicListener(settings.host)
        }
        let certificate = options.certificatePath ?? server.certificatePath
        let key = options.privateKeyPath ?? server.privateKeyPath
        let tls: TLSConfiguration
        switch (certificate, key) {
        case (let certificate?, let key?):
            tls = .server(certificateChain: .file(certificate), privateKey: .file(key), clientCA: clientCA)
        case (nil, nil):
            let identity = try SelfSignedIdentity.loadOrCreate(directory: options.stateDirectory ?? SelfSignedIdentity.defaultDirectory())
            launch.selfSignedIdentity = identity
            tls = identity.serverConfiguration(clientCA: clientCA)
        default:
            throw TunnelServerLaunchError.invalidOption("--cert and --key go together: give both, or neither to use a generated self-signed certificate")
        }
        launch.settings.tls = try TLSContext(configuration: tls)
        return launch
    }

    /// Startups (`--max-startups`, `--max-startups-per-address`) and the TLS handshake's deadline.
    private static func applyAdmissionLimits(
        _ options: TunnelServerLaunchOptions, _ limits: TunnelServerSettings.Limits, to settings: inout TunnelServer.Settings
    ) throws {
        settings.startups = limits.startups
        if let text = options.startups {
            do {
                settings.startups = try StartupsPolicy(parsing: text)
            } catch {
                throw TunnelServerLaunchError.invalidOption("--max-startups \(error)")
            }
        }
        settings.startupsPerAddress = try positive(options.startupsPerAddress ?? limits.startupsPerAddress, "--max-startups-per-address")
        settings.tlsHandshakeTimeout = try seconds(options.tlsHandshakeTimeout, orElse: limits.tlsHandshakeTimeout, "--tls-handshake-timeout")
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || IPAddress(HostResolver.unbracketed(host))?.isLoopback == true
    }

    private static func positive(_ value: Int, _ option: String) throws -> Int {
        guard value > 0 else { throw TunnelServerLaunchError.invalidOption("\(option) \(value): expected a positive number") }
        return value
    }

    private static func seconds(_ flag: Double?, orElse configured: Duration, _ option: String) throws -> TimeAmount {
        if let flag {
            guard flag > 0, flag.isFinite else { throw TunnelServerLaunchError.invalidOption("\(option) \(flag): expected a positive number of seconds") }
            return TimeAmount(seconds: flag)
        }
        return TimeAmount(configured)
    }
}

/// Why the server will not start, said so that the operator can fix it.
public enum TunnelServerLaunchError: Error, CustomStringConvertible {
    case configuration(ConfigurationError)
    case policy(String)
    case invalidOption(String)
    case plaintextOffLoopback(String)
    case unauthenticatedPublicListener(String)

    public var description: String {
        switch self {
        case .configuration(let error):
            return "configuration: \(error)"
        case .policy(let reason):
            return "destination policy: \(reason)"
        case .invalidOption(let reason):
            return reason
        case .plaintextOffLoopback(let host):
            return "--plaintext is only allowed on a loopback address, not \(host): an unencrypted tunnel must not cross a network"
        case .unauthenticatedPublicListener(let host):
            return "refusing to listen on \(host) without client authentication: anyone who can reach it could use this server as a proxy. "
                + "Require client certificates with --client-ca FILE (or Server.ClientCA in the configuration), or passwords with --users FILE, or listen on 127.0.0.1"
        }
    }
}
