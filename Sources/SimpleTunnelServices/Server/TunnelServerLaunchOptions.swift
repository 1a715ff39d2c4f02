import ArgumentParser

/// The serving options of `tunnel-server`, declared once: the command parses
/// them (`@OptionGroup`), and the launch reads them at start and again on
/// every reload. Nil (or empty) means "not given": the configuration file's
/// value, else the default, applies (`TunnelServerLaunch.prepare`).
///
/// Times are `Duration`s, as in the configuration file's settings; the
/// running server's NIO timers get them as `TimeAmount`s.
///
/// Make one with `TunnelServerLaunchOptions.none` (or `parse(_:)`), never
/// `init()`: ArgumentParser's bare definitions cannot be read.
public struct TunnelServerLaunchOptions: ParsableArguments, Sendable {
    @Option(help: "Address to listen on. Default 127.0.0.1.")
    public var host: String?

    @Option(help: "Port to listen on; 0 picks a free one. Default 4433.")
    public var port: Int?

    @Option(name: .customLong("config"), help: "Server configuration property list (XML or binary, PROTOCOL.md A5).")
    public var configurationPath: String?

    @Option(name: .customLong("cert"), help: "PEM certificate chain. Without --cert/--key a self-signed certificate is generated and kept.")
    public var certificatePath: String?

    @Option(name: .customLong("key"), help: "PEM private key for --cert.")
    public var privateKeyPath: String?

    @Option(name: .customLong("client-ca"), help: "Require client certificates issued by this PEM CA bundle (mutual TLS).")
    public var clientCAPath: String?

    @Flag(help: "No TLS, for Apple's stock sample app: tunnels are neither encrypted nor authenticated. Off loopback it needs --plaintext-clients.")
    public var plaintext = false

    @Option(
        name: .customLong("plaintext-clients"),
        help: "With --plaintext: the only networks that may connect, CIDR[,CIDR…] (e.g. 192.168.1.0/24,fd00:1::/64); others are closed unread.")
    public var plaintextClients: String?

    @Option(
        name: .customLong("proxy-protocol-from"),
        help: "Load balancers, CIDR[,CIDR…], whose connections start with a PROXY v2 header (haproxy's send-proxy-v2) naming the client; others send none.")
    public var proxyProtocolFrom: String?

    @Option(name: .customLong("users"), help: "Users file (LOGIN:HASH lines, see `tunnel-server passwd`): every tunnel must log in first.")
    public var usersPath: String?

    @Option(name: .customLong("database"), help: "Share logins, leases and sessions with other servers in this PostgreSQL database: postgres://USER@HOST:PORT/DATABASE (no password here). Replaces --users and the lease file.")
    public var databaseURL: String?

    @Option(name: .customLong("database-password-file"), help: "File whose first line is the database password (mode 0600); else $PGPASSWORD.")
    public var databasePasswordFile: String?

    @Option(name: .customLong("state-directory"), help: "Where the generated certificate and the remembered tunnel addresses (leases.json) are kept. Default $XDG_STATE_HOME/simpletunnel.")
    public var stateDirectory: String?

    @Option(help: "Allow only destinations matching this rule (TARGET[:PORTS], repeatable), e.g. 10.0.0.0/8:22,443 or *.example.com. On a public --host, an address rule also opens the server's loopback, link-local and metadata addresses, which are refused by default.")
    public var allow: [String] = []

    @Option(help: "Refuse destinations matching this rule (repeatable); deny wins over allow.")
    public var deny: [String] = []

    @Flag(
        name: .customLong("client-to-client"),
        help: "Let IP-layer clients reach one another's leases (Server.ClientIsolation false). By default each reaches only the server and the networks behind it.")
    public var clientToClient = false

    @Flag(
        name: .customLong("no-app-layer"),
        help: "Refuse app-layer flows (TCP and UDP opens: forwards, SOCKS) for every login, so clients get the IP tunnel only (Server.AppLayer false).")
    public var noAppLayer = false

    @Option(name: .customLong("max-tunnels"), help: "Tunnels served at once. Default 256.")
    public var maximumTunnels: Int?

    @Option(name: .customLong("max-tunnels-per-login"), help: "Tunnels one login may hold at once; one more is refused. Default 16.")
    public var tunnelsPerLogin: Int?

    @Option(name: .customLong("max-flows-per-tunnel"), help: "Flows one tunnel may hold. Default 4096.")
    public var maximumFlowsPerTunnel: Int?

    @Option(name: .customLong("max-udp-flows-per-tunnel"), help: "UDP flows one tunnel may hold. Default 256.")
    public var maximumUDPFlowsPerTunnel: Int?

    @Option(name: .customLong("first-message-timeout"), help: "Seconds a client has to finish TLS and send a message. Default 10; 300 with --plaintext.", transform: UserSeconds.positiveDuration)
    public var firstMessageTimeout: Duration?

    @Option(name: .customLong("max-startups"), help: "Connections not yet past TLS and login, as START:RATE:FULL: from START on, RATE% of new ones are dropped, rising to all at FULL. Default 64:30:256.")
    public var startups: String?

    @Option(name: .customLong("max-startups-per-address"), help: "Connections not yet past TLS and login from one address (an IPv6 /64). Default 16.")
    public var startupsPerAddress: Int?

    @Option(name: .customLong("tls-handshake-timeout"), help: "Seconds a client has to finish the TLS handshake. Default 5.", transform: UserSeconds.positiveDuration)
    public var tlsHandshakeTimeout: Duration?

    @Option(name: .customLong("max-login-checks"), help: "Password checks hashing at once; more wait their turn. Default 4.")
    public var loginChecks: Int?

    @Option(name: .customLong("max-login-checks-per-address"), help: "Password checks running or waiting from one address (an IPv6 /64). Default 2.")
    public var loginChecksPerAddress: Int?

    @Option(name: .customLong("max-login-failures"), help: "Failed logins from one address (an IPv6 /64) within a minute before it is refused unchecked. Default 5.")
    public var loginFailures: Int?

    @Option(name: .customLong("connect-timeout"), help: "Seconds to connect to a destination. Default 10.", transform: UserSeconds.positiveDuration)
    public var connectTimeout: Duration?

    @Option(name: .customLong("udp-idle-timeout"), help: "Seconds after which an idle UDP flow closes. Default 60.", transform: UserSeconds.positiveDuration)
    public var udpIdleTimeout: Duration?

    @Option(
        name: .customLong("max-flow-sockets"),
        help: "Flow sockets of all tunnels together, draining ones included; one tunnel gets a quarter. Default: what the open-file limit leaves.")
    public var maximumFlowSockets: Int?

    @Option(name: .customLong("flow-drain-timeout"), help: "Seconds a closed TCP flow's unsent data may drain before its socket is reset. Default 30.", transform: UserSeconds.positiveDuration)
    public var flowDrainTimeout: Duration?

    @Option(name: .customLong("tunnel-buffer-mib"), help: "MiB one tunnel may queue for its client; past it its flows stop reading. Default 8.")
    public var tunnelBufferMiB: Int?

    @Option(name: .customLong("early-data-mib"), help: "MiB of data one tunnel may send for flows still connecting; past it it is not read. Default 4.")
    public var earlyDataMiB: Int?

    @Option(
        name: .customLong("server-buffer-mib"),
        help: "MiB all tunnels together may hold for their clients; past it they pause. Default: a quarter of RAM, at most 1024.")
    public var serverBufferMiB: Int?

    @Option(name: .customLong("idle-timeout"), help: "Seconds a tunnel with no open flow may stay silent before it is closed; 0 for never. Default 900.", transform: UserSeconds.zeroOrPositiveDuration)
    public var idleTimeout: Duration?

    @Option(help: "Start the IP layer on this TUN device (a name, or a pattern like stun%d); failing to set it up stops the server. Without --tun the IP layer starts only for a --config with an IPv4 pool, on stun%d.")
    public var tun: String?

    @Option(
        name: .customLong("tun-address"),
        help: "The server's address on the TUN device, once per family (IPv4, IPv6). Default: the address just below each pool.")
    public var tunAddress: [String] = []

    @Option(help: "MTU of the TUN device, also pushed to clients; at least 1280 when the configuration offers IPv6.")
    public var mtu = 1400

    @Flag(name: .customLong("no-ip-layer"), help: "Do not create a TUN device; IP tunnels are refused (result 5).")
    public var noIPLayer = false

    public init() {}

    public mutating func validate() throws {
        for address in tunAddress where IPv4Address(address) == nil && IPv6Address(address) == nil {
            throw ValidationError("--tun-address \(address): expected an IPv4 or IPv6 address")
        }
        if tunAddress.compactMap(IPv4Address.init).count > 1 || tunAddress.compactMap(IPv6Address.init).count > 1 {
            throw ValidationError("--tun-address: give at most one address of each family (one IPv4, one IPv6)")
        }
        guard (576...65535).contains(mtu) else {
            throw ValidationError("--mtu \(mtu): expected 576 to 65535")
        }
        if noIPLayer, tun != nil {
            throw ValidationError("--tun asks for the IP layer and --no-ip-layer turns it off: give one")
        }
    }

    /// Nothing given: every option unset.
    public static var none: TunnelServerLaunchOptions {
        do {
            return try parse([])
        } catch {
            preconditionFailure("the serving options have a required argument: \(error)")
        }
    }

    public static let defaultHost = "127.0.0.1"
    public static let defaultPort = 4433
}
