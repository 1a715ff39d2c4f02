import Foundation
import ArgumentParser
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SimpleTunnelServices

/// Options every subcommand takes: where the server is and how to trust it.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The server, HOST:PORT ([IPv6]:PORT).")
    var server = "127.0.0.1:4433"

    @Option(help: "Verify the server against this PEM CA bundle instead of the system trust store.")
    var ca: String?

    @Option(name: .customLong("pin-sha256"), help: "Accept exactly the server certificate with this SHA-256 fingerprint (tunnel-server prints it).")
    var pinSHA256: [String] = []

    @Flag(help: "Do not verify the server at all. For experiments only.")
    var insecure = false

    @Option(help: "PEM client certificate, for servers that require mutual TLS.")
    var cert: String?

    @Option(help: "PEM private key for --cert.")
    var key: String?

    @Option(name: .customLong("server-name"), help: "Name to verify in the server's certificate and send as SNI. Default: the host of --server.")
    var serverName: String?

    @Option(
        name: .customLong("server-address"),
        help: "Connect to this IP address instead of looking up the host of --server, which still names the certificate to verify (as curl's --resolve). No name lookup is made, then or on reconnection.")
    var serverAddress: String?

    @Flag(help: "No TLS (servers started with --plaintext): neither encrypted nor authenticated.")
    var plaintext = false

    @Option(help: "Login for servers started with --users.")
    var user: String?

    @Option(name: .customLong("password-file"), help: "File whose first line is the password (else $SIMPLETUNNEL_PASSWORD).")
    var passwordFile: String?

    @Option(help: "Seconds between keepalive probes; a server that misses 3 in a row is dead. 0 turns them off.", transform: UserSeconds.zeroOrPositive)
    var keepalive: Double = 15

    @Option(help: "Control socket for `tunnel-client status` and `stop`. Default: $XDG_RUNTIME_DIR/simpletunnel/client.sock; without XDG_RUNTIME_DIR, /run/simpletunnel-client/client.sock for root, else /tmp/simpletunnel-UID/client.sock.")
    var control: String?

    @Flag(help: "Exit when the tunnel is lost instead of reconnecting.")
    var once = false

    @Option(name: .customLong("run-as"), help: "Once the listeners (or the TUN device and routes) are set up, become this user; `ip` keeps only CAP_NET_ADMIN (start as root).")
    var runAs: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .notice

    func validate() throws {
        if let runAs {
            do { _ = try Privileges.account(named: runAs) } catch { throw ValidationError("\(error)") }
        }
        _ = try launchOptions.connectionSettings()
    }

    /// The connection settings with the keepalive asked for.
    func connectionSettings() throws -> TunnelClientConnection.Settings {
        var settings = try launchOptions.connectionSettings()
        if keepalive == 0 {
            settings.liveness.probeInterval = nil
        } else {
            settings.liveness.probeInterval = TimeAmount(seconds: keepalive)
            settings.liveness.probeTimeout = TimeAmount(seconds: keepalive * 3)
        }
        return settings
    }

    var launchOptions: TunnelClientLaunchOptions {
        var options = TunnelClientLaunchOptions()
        options.server = server
        options.caFile = ca
        options.pinnedSHA256 = pinSHA256
        options.insecure = insecure
        options.certificatePath = cert
        options.privateKeyPath = key
        options.serverName = serverName
        options.serverAddress = serverAddress
        options.plaintext = plaintext
        options.login = user
        options.passwordFile = passwordFile
        return options
    }

    /// The program's logger; the logging system is set up by the first call (swift-log allows one).
    func makeLogger() -> Logger {
        let level = logLevel
        LoggingBootstrap.once {
            LoggingSystem.bootstrap { label in
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        return Logger(label: "tunnel-client")
    }

    /// Runs the client until SIGINT/SIGTERM or `tunnel-client stop` (or, with --once, until the tunnel is lost).
    /// With --run-as, privileges are dropped once the offers are up, keeping `capabilities` for later network changes.
    /// Listeners are bound before the tunnel is opened; `offersNeedTunnel` waits for it (the IP tunnel).
    /// `socketMark` marks the tunnel's socket (for the IP tunnel's kill switch).
    func run(
        keeping capabilities: Set<Privileges.Capability> = [], offersNeedTunnel: Bool = false, socketMark: UInt32? = nil,
        _ startOffers: @escaping TunnelClientService.Offers
    ) async throws {
        let logger = makeLogger()
        let account = try runAs.map { name throws(PrivilegeError) in try Privileges.account(named: name) }
        var settings = try connectionSettings()
        settings.socketMark = socketMark
        let service = TunnelClientService(
            settings: settings, group: MultiThreadedEventLoopGroup.singleton,
            logger: logger, controlPath: control ?? ControlProtocol.defaultPath(), controlPathIsRequired: control != nil,
            reconnect: once ? nil : ReconnectBackoff(), offersNeedTunnel: offersNeedTunnel
        ) { current, status in
            let offers = try await startOffers(current, status)
            if let account {
                try Privileges.drop(to: account, keeping: capabilities)
                let kept = capabilities.isEmpty ? "no capabilities" : capabilities.map(\.description).sorted().joined(separator: ", ")
                logger.notice("running as \(account.name) (uid \(account.uid)), keeping \(kept)")
            }
            return offers
        }
        // `tunnel-client stop` ends the service normally; that ends the program normally too.
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        do {
            try await group.run()
        } catch {
            logger.critical("\(userFacing(error))")
            throw ExitCode(1)
        }
    }
}

/// swift-log's bootstrap may run once per process; `ip` logs before its connection does.
private enum LoggingBootstrap {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var done = false

    static func once(_ body: () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        done = true
        body()
    }
}
