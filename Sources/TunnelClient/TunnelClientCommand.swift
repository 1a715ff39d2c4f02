import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SimpleTunnelServices

/// A synchronous entry point, so the main thread lives on (see `BlockingMain`).
@main
enum TunnelClientMain {
    static func main() {
        MallocTuning.apply()
        BlockingMain.run { await TunnelClientCommand.main() }
    }
}

struct TunnelClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-client",
        abstract: "Open a SimpleTunnel tunnel and offer it locally: port forwards, a SOCKS5 proxy, the server's configuration.",
        subcommands: [Forward.self, Socks.self, IP.self, Config.self, Status.self, Stop.self]
    )
}

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

    @Flag(help: "No TLS (servers started with --plaintext, on loopback).")
    var plaintext = false

    @Option(help: "Login for servers started with --users.")
    var user: String?

    @Option(name: .customLong("password-file"), help: "File whose first line is the password (else $SIMPLETUNNEL_PASSWORD).")
    var passwordFile: String?

    @Option(help: "Seconds between keepalive probes; a server that misses 3 in a row is dead. 0 turns them off.")
    var keepalive: Double = 15

    @Option(help: "Control socket for `tunnel-client status` and `stop`. Default: under $XDG_RUNTIME_DIR.")
    var control: String?

    @Flag(help: "Exit when the tunnel is lost instead of reconnecting.")
    var once = false

    @Option(name: .customLong("run-as"), help: "Once the listeners (or the TUN device and routes) are set up, become this user; `ip` keeps only CAP_NET_ADMIN (start as root).")
    var runAs: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical. Default notice.")
    var logLevel: Logger.Level = .notice

    func validate() throws {
        if let runAs {
            do { _ = try Privileges.account(named: runAs) } catch { throw ValidationError("\(error)") }
        }
        guard keepalive >= 0, keepalive.isFinite else { throw ValidationError("--keepalive \(keepalive): expected seconds, 0 for off") }
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
        options.plaintext = plaintext
        options.login = user
        options.passwordFile = passwordFile
        return options
    }

    func makeLogger() -> Logger {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "tunnel-client")
    }

    /// Runs the client until SIGINT/SIGTERM or `tunnel-client stop` (or, with --once, until the tunnel is lost).
    /// With --run-as, privileges are dropped once the offers are up, keeping `capabilities` for later network changes.
    func run(keeping capabilities: Set<Privileges.Capability> = [], _ startOffers: @escaping TunnelClientService.Offers) async throws {
        let logger = makeLogger()
        let account = try runAs.map { name throws(PrivilegeError) in try Privileges.account(named: name) }
        let service = TunnelClientService(
            settings: try connectionSettings(), group: MultiThreadedEventLoopGroup.singleton,
            logger: logger, controlPath: control ?? ControlProtocol.defaultPath(), controlPathIsRequired: control != nil,
            reconnect: once ? nil : ReconnectBackoff()
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

struct Forward: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forward local ports through the tunnel, like ssh -L.",
        discussion: "Each connection to a -L port opens a TCP flow; each source address on a -U port gets a UDP flow."
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(name: .customShort("L"), help: "TCP forward [BIND:]LPORT:HOST:PORT (repeatable).")
    var tcp: [String] = []

    @Option(name: .customShort("U"), help: "UDP forward [BIND:]LPORT:HOST:PORT (repeatable).")
    var udp: [String] = []

    func validate() throws {
        guard !tcp.isEmpty || !udp.isEmpty else {
            throw ValidationError("give at least one -L or -U forward, e.g. -L 8080:example.com:80")
        }
        for text in tcp + udp {
            do { _ = try ForwardSpecification(parsing: text) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        let tcp = try self.tcp.map { try ForwardSpecification(parsing: $0) }
        let udp = try self.udp.map { try ForwardSpecification(parsing: $0) }
        try await connection.run { tunnel, status in
            var offers: [TunnelClientService.LocalOffer] = []
            let logger = Logger(label: "tunnel-client")
            for spec in tcp {
                let forwarder = try await TCPPortForwarder.start(
                    bindHost: spec.bindHost, bindPort: spec.bindPort, destination: spec.destination, tunnel: tunnel, logger: logger)
                offers.append(.init(close: { await forwarder.close() }))
            }
            for spec in udp {
                let forwarder = try await UDPPortForwarder.start(
                    bindHost: spec.bindHost, bindPort: spec.bindPort, destination: spec.destination, tunnel: tunnel, logger: logger)
                offers.append(.init(close: { await forwarder.close() }))
            }
            return offers
        }
    }
}

struct Socks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offer a SOCKS5 proxy (CONNECT and UDP ASSOCIATE, no authentication) through the tunnel.",
        discussion: "Host names are resolved by the server: use curl --socks5-hostname, or socks5h:// URLs."
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Address and port to listen on.")
    var listen = "127.0.0.1:1080"

    func validate() throws {
        do { _ = try TunnelClientLaunchOptions.parseEndpoint(listen, option: "--listen") } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        let listen = try TunnelClientLaunchOptions.parseEndpoint(self.listen, option: "--listen")
        try await connection.run { tunnel, status in
            let proxy = try await SOCKSProxy.start(bindHost: listen.host, bindPort: listen.port, tunnel: tunnel, logger: Logger(label: "tunnel-client"))
            return [.init(close: { await proxy.close() })]
        }
    }
}

struct IP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ip",
        abstract: "A full IP tunnel over a TUN device (needs root or CAP_NET_ADMIN).",
        discussion: """
            Takes the address the server leases, the routes it pushes (or everything, keeping a \
            route to the server itself outside the tunnel, with IPv6 blackholed so nothing leaks \
            around an IPv4-only tunnel) and, with --dns, its DNS servers. All of it is removed on exit.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "TUN device name, or a pattern like stun%d.")
    var tun = "stun%d"

    @Flag(name: .customLong("no-routes"), help: "Do not add routes; only the address.")
    var noRoutes = false

    @Flag(help: "Use the server's DNS servers while the tunnel is up.")
    var dns = false

    @Option(help: "MTU of the TUN device.")
    var mtu = 1400

    func run() async throws {
        var options = IPTunnelOptions()
        options.deviceName = tun
        options.applyRoutes = !noRoutes
        options.applyDNS = dns
        options.mtu = mtu
        let ipOptions = options
        // Changing and undoing routes needs CAP_NET_ADMIN; restoring /etc/resolv.conf needs to write root's file.
        let capabilities: Set<Privileges.Capability> = dns ? [.netAdmin, .dacOverride] : [.netAdmin]
        try await connection.run(keeping: capabilities) { current, status in
            guard let tunnel = current.connection else { throw TunnelClientLaunchError("the tunnel closed before the IP flow could be opened") }
            let session = try await IPTunnelSession.start(tunnel: tunnel, options: ipOptions, logger: Logger(label: "tunnel-client"))
            let showLease: @Sendable () -> Void = { status.setLease("\(session.settings.address)/\(session.settings.prefixLength) on \(session.deviceName)") }
            showLease()
            return [
                .init(
                    close: { session.stop() },
                    reattach: { tunnel in
                        try await session.reattach(to: tunnel)
                        showLease()
                    })
            ]
        }
    }
}

struct Config: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the server's configuration (fetchConfiguration) as JSON.")

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        let logger = connection.makeLogger()
        do {
            let tunnel = try await TunnelClientConnection.connect(
                settings: try connection.connectionSettings(), group: MultiThreadedEventLoopGroup.singleton, logger: logger)
            print(PropertyListValue.dictionary(tunnel.serverConfiguration).jsonText())
            await tunnel.close()
        } catch {
            logger.critical("\(userFacing(error))")
            throw ExitCode(1)
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the running client's state: server, TLS, lease, flows, bytes, uptime, last error.")

    @Option(help: "The running client's control socket. Default: under $XDG_RUNTIME_DIR.")
    var control: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        let response = try await ControlRequest.send("status", control: control)
        guard let status = response.status else { throw ValidationError(response.error ?? "no status in the answer") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
        } else {
            print(status.text)
        }
    }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop the running client, as SIGTERM would.")

    @Option(help: "The running client's control socket. Default: under $XDG_RUNTIME_DIR.")
    var control: String?

    func run() async throws {
        let response = try await ControlRequest.send("stop", control: control)
        print(response.ok ? "stopping" : (response.error ?? "refused"))
    }
}

enum ControlRequest {
    static func send(_ type: String, control: String?) async throws -> ControlProtocol.Response {
        let path = control ?? ControlProtocol.defaultPath()
        do {
            return try await ControlClient.request(type, path: path, group: MultiThreadedEventLoopGroup.singleton)
        } catch {
            FileHandle.standardError.write(Data("tunnel-client: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
