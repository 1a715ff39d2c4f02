import ArgumentParser
import Foundation
import Logging
import NIOCore

/// The server's settings decided from the command line, the configuration
/// file and the defaults (in that order of precedence), with the safety rules
/// checked: no open proxy on a public address, plaintext only on loopback.
public struct TunnelServerLaunch: Sendable {
    public var settings: TunnelServer.Settings
    public var configuration: TunnelServerConfiguration
    /// Set when the server presents its generated self-signed certificate.
    public var selfSignedIdentity: SelfSignedIdentity?
    /// The destination policy in force, for flows (in `settings.opener`) and the IP layer.
    public var policy: DestinationPolicy
    /// Which default policy applies and why, logged at start.
    public var policyNote: String
    /// Things to tell the operator at start.
    public var warnings: [String] = []
    /// Set with `--database`: logins come from it, and the IP layer leases from it.
    public var database: (any SharedServerStore)?
    /// `--users`, which SIGHUP reads again.
    public var usersFile: UsersFile?
    /// The IP layer to start; nil: IP tunnels are refused (result 5).
    public var ipLayer: IPLayerLaunch?
    /// Where the command line and the file ask the server to listen. The same as
    /// `settings.host`, but on a reload: then the server keeps its listener, and
    /// the file's new address waits for a restart.
    public var askedListenAddress: String

    /// - Parameter openFileLimit: the soft RLIMIT_NOFILE the server runs with
    ///   (raised first, see `OpenFileLimit`); flow sockets get what it leaves.
    /// - Parameter ownAddresses: this machine's interface addresses, closed to
    ///   flows on a public listener (`OwnAddressGuard`).
    /// - Parameter openSharedStore: opens the store `--database` names
    ///   (tunnel-server passes the PostgreSQL one); nil: `--database` is refused.
    /// - Parameter loadedUsers: the users file a running server already holds;
    ///   a reload reads it on its own (`UsersFile.reload`), so it is not read twice
    ///   and a bad users file does not hold back the rest of the settings.
    /// - Parameter listeningOn: on a reload, the address the running server
    ///   listens on. Whether it is public decides the destination policy's
    ///   defaults, the own-address guard and whether clients must authenticate,
    ///   so they are derived from it, never from an address the file names now.
    public static func prepare(
        _ options: TunnelServerLaunchOptions, openSharedStore: SharedServerStoreOpener? = nil, loadedUsers: UsersFile? = nil,
        listeningOn: String? = nil,
        resolvConf: String?, openFileLimit: Int = OpenFileLimit.current()?.soft ?? 1024,
        ownAddresses: LocalInterfaceAddresses = LocalInterfaceAddresses(),
        environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger = Logger(label: "tunnel-server")
    ) throws -> TunnelServerLaunch {
        // The command line checks them as it parses; a caller that built them by hand gets the same checks.
        var checked = options
        do { try checked.validate() } catch { throw TunnelServerLaunchError.invalidOption("\(error)") }
        var configuration: TunnelServerConfiguration
        do {
            if let path = options.configurationPath {
                configuration = try TunnelServerConfiguration.load(contentsOf: path, resolvConf: resolvConf)
            } else {
                configuration = TunnelServerConfiguration.embeddedDefault.fillingMissingDNS(fromResolvConf: resolvConf)
            }
        } catch {
            throw TunnelServerLaunchError.configuration(error, file: options.configurationPath)
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
        let askedListenAddress = options.host ?? server.listenAddress ?? TunnelServerLaunchOptions.defaultHost
        settings.host = listeningOn ?? askedListenAddress
        settings.port = options.port ?? server.port ?? TunnelServerLaunchOptions.defaultPort
        guard (0...65535).contains(settings.port) else {
            throw TunnelServerLaunchError.invalidOption("--port \(settings.port): expected 0 to 65535 (0 picks a free port)")
        }
        // Logins are on with a users file or a database; only then are their limits read.
        let logins = options.usersPath != nil || (options.databaseURL ?? server.databaseURL) != nil
        var limits = LimitMerge(settings: settings, logins: logins ? LimitMerge.LoginLimits() : nil, openFileLimit: openFileLimit)
        try ServerLimit.merge(options, server.limits, into: &limits)
        settings = limits.settings
        let loopback = Self.isLoopback(settings.host)
        // On a public address, clients must not reach the server's own loopback services or the cloud metadata service.
        let policy = loopback ? server.policy : server.policy.withPublicListenerDefaults()
        settings.opener.authorizer = loopback ? policy : OwnAddressGuard(policy: policy, ownAddresses: ownAddresses)
        settings.clientConfiguration = configuration.configurationForFetch()
        settings.access = server.access
        if options.noAppLayer { settings.access.appLayer = false }
        settings.dns = DNSForwarder(
            resolver: resolvConf.flatMap(DNSForwarder.firstNameserver(inResolvConf:)), sockets: settings.opener.socketBudget.makeServerAccount())

        let database = try Self.database(options, server, open: openSharedStore, environment: environment, logger: logger)
        // Read at start only: a reload keeps the running store (`TunnelServer.apply`).
        if listeningOn == nil {
            if let database {
                (settings.usageStore, settings.usageStoreName) = (database.usageStore, "the database \(database), all servers together")
            } else {
                let path = (options.stateDirectory ?? SelfSignedIdentity.defaultDirectory()) + "/" + UsageFile.defaultName
                do {
                    (settings.usageStore, settings.usageStoreName) = (try UsageFile(path: path), path)
                } catch {
                    throw TunnelServerLaunchError.invalidOption("\(error)")
                }
            }
        }
        var usersFile: UsersFile?
        if options.usersPath != nil || database != nil {
            let users: any LoginDirectory
            if let database {
                users = database.logins
            } else {
                do {
                    let path = options.usersPath ?? ""
                    let file = try loadedUsers.flatMap { $0.path == path ? $0 : nil } ?? UsersFile.load(path: path)
                    users = file
                    usersFile = file
                } catch {
                    throw TunnelServerLaunchError.invalidOption("--users: \(error)")
                }
            }
            let login = limits.logins ?? LimitMerge.LoginLimits()
            settings.authentication = .init(
                users: users, limiter: LoginRateLimiter(maximumFailures: login.failures), checker: PasswordChecker(limits: login.checks))
        }
        var launch = TunnelServerLaunch(
            settings: settings, configuration: configuration, policy: policy,
            policyNote: Self.policyNote(host: settings.host, loopback: loopback) + Self.allowListNote(policy), askedListenAddress: askedListenAddress)
        launch.database = database
        launch.usersFile = usersFile
        // Clients take the device's MTU from their lease's answer (IPv4.MTU, PROTOCOL.md A5).
        launch.configuration.otherIPv4Keys["MTU"] = PropertyListValue(options.mtu)
        launch.configuration.otherIPv6Keys["MTU"] = PropertyListValue(options.mtu)
        launch.ipLayer = Self.ipLayer(options, configuration: launch.configuration, policy: policy, database: database)
        launch.warnings += Self.refusedDNSServers(configuration, policy: policy)
        launch.warnings += limits.warnings
        launch.warnings += Self.dnsHint(configuration, resolvConf: resolvConf)
        if database == nil { launch.warnings += settings.access.loginsWithoutPassword(in: usersFile?.users) }
        launch.settings.proxyProtocolFrom = server.proxyProtocolFrom
        if let text = options.proxyProtocolFrom {
            do {
                launch.settings.proxyProtocolFrom = try IPNetworkList(parsing: text)
            } catch {
                throw TunnelServerLaunchError.invalidOption("--proxy-protocol-from \(error)")
            }
        }
        let clientCA = options.clientCAPath ?? server.clientCAPath
        let plaintextMode = try Self.plaintextMode(options, host: settings.host, loopback: loopback)
        if let plaintextMode {
            launch.settings.clientNetworks = plaintextMode.clientNetworks
            launch.warnings.append(plaintextMode.warning(firstMessageTimeout: settings.firstMessageTimeout))
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

    /// The shared database, when the command line or the file names one; its logins replace a users file.
    private static func database(
        _ options: TunnelServerLaunchOptions, _ server: TunnelServerSettings, open: SharedServerStoreOpener?,
        environment: [String: String], logger: Logger
    ) throws -> (any SharedServerStore)? {
        guard let url = options.databaseURL ?? server.databaseURL else {
            guard options.databasePasswordFile == nil else { throw TunnelServerLaunchError.invalidOption("--database-password-file needs --database") }
            return nil
        }
        guard options.usersPath == nil else {
            throw TunnelServerLaunchError.invalidOption(
                "--users and --database both name where logins are: with --database they are in the database (tunnel-server passwd --database)")
        }
        guard let open else {
            throw TunnelServerLaunchError.invalidOption("--database: this build of the server has no database support")
        }
        do {
            return try open(url, options.databasePasswordFile ?? server.databasePasswordFilePath, environment, logger)
        } catch {
            throw TunnelServerLaunchError.invalidOption("\(error)")
        }
    }

    /// Any Allow rule makes the policy a list: said at start, since a hint to
    /// open one loopback service would otherwise close everything else unawares.
    static func allowListNote(_ policy: DestinationPolicy) -> String {
        guard !policy.allowRules.isEmpty else { return "" }
        let rules = policy.allowRules.map(\.text).joined(separator: ", ")
        return "; the Allow rules (\(rules)) make it an allow list: every other destination is refused"
            + (policy.allowRules.contains { $0.text == "*" } ? "" : " (add --allow '*' to keep the rest open)")
    }

    static func policyNote(host: String, loopback: Bool) -> String {
        loopback
            ? "destination policy: listening on loopback (\(host)), so clients may reach this machine's loopback services unless a Deny rule refuses them"
            : "destination policy: listening on \(host), so clients' flows may not reach this machine's own addresses "
                + "(every interface's, the TUN device's included), its loopback (127.0.0.0/8, ::1, 0.0.0.0/8, ::), "
                + "link-local addresses (169.254.0.0/16, fe80::/10) or the cloud metadata service (169.254.169.254, fd00:ec2::254) "
                + "unless an --allow address rule opens them"
    }

    /// Warnings for the DNS servers IP-layer clients are told to use whose
    /// packets the policy drops (a cloud resolver at a link-local address, say).
    static func refusedDNSServers(_ configuration: TunnelServerConfiguration, policy: DestinationPolicy) -> [String] {
        let filter = PacketDestinationFilter(policy)
        return (configuration.dns?.servers ?? []).compactMap { server in
            guard case .v4(let address) = server.unmapped,
                filter.verdict(for: address, port: .port(53)) != .allowed || filter.keepsOnLink(address, port: .port(53))
            else { return nil }
            return "IP-layer clients are told to use the DNS server \(address), but the destination policy drops packets to it; "
                + "--allow \(address):53 opens it for DNS"
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || IPAddress(TunnelEndpoint.unbracketed(host))?.isLoopback == true
    }
}

/// Why the server will not start, said so that the operator can fix it.
public enum TunnelServerLaunchError: Error, CustomStringConvertible {
    /// `file`: the configuration file, named beside a key path (an unreadable file's error names it already).
    case configuration(ConfigurationError, file: String? = nil)
    case policy(String)
    case invalidOption(String)
    case plaintextOffLoopback(String)
    case unauthenticatedPublicListener(String)

    public var description: String {
        switch self {
        case .configuration(let error, let file):
            switch error {
            case .unreadableFile, .notAPropertyList: return "configuration: \(error)"
            default: return "configuration" + (file.map { " file \($0)" } ?? "") + ": \(error)"
            }
        case .policy(let reason):
            return "destination policy: \(reason)"
        case .invalidOption(let reason):
            return reason
        case .plaintextOffLoopback(let host):
            return "--plaintext on \(host) needs --plaintext-clients CIDR[,CIDR…], the networks whose devices may connect "
                + "(such as --plaintext-clients 192.168.1.0/24): a tunnel without TLS has no encryption and no authentication, "
                + "so it must not be open to everyone who reaches \(host). Or listen on 127.0.0.1"
        case .unauthenticatedPublicListener(let host):
            return "refusing to listen on \(host) without client authentication: anyone who can reach it could use this server as a proxy. "
                + "Require client certificates with --client-ca FILE (or Server.ClientCA in the configuration), or passwords with --users FILE, or listen on 127.0.0.1"
        }
    }
}
