import ArgumentParser
import Logging
import SimpleTunnelServices

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
