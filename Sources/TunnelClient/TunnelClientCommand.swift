import ArgumentParser

@main
struct TunnelClientCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-client",
        abstract: "SimpleTunnel client (not yet implemented: port forwards, SOCKS5 and the IP tunnel land with later issues)."
    )

    func run() throws {
        print("tunnel-client: not implemented yet; this build only carries the wire protocol library.")
        throw ExitCode(2)
    }
}
