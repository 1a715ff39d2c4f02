import ArgumentParser
import Logging
import SimpleTunnelServices

struct Forward: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forward local ports through the tunnel, like ssh -L.",
        discussion: "Each connection to a -L port opens a TCP flow; each source address on a -U port gets a UDP flow."
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(name: .customShort("L"), help: ArgumentHelp("TCP forward: connections to [bind:]port go to host:hostport from the server (repeatable).", valueName: "[bind:]port:host:hostport"))
    var tcp: [String] = []

    @Option(name: .customShort("U"), help: ArgumentHelp("UDP forward: datagrams to [bind:]port go to host:hostport from the server (repeatable).", valueName: "[bind:]port:host:hostport"))
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
