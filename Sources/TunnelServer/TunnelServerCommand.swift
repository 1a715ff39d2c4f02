import ArgumentParser

@main
struct TunnelServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-server",
        abstract: "SimpleTunnel server (not yet implemented: the tunnel engine lands with the app-layer issue)."
    )

    func run() throws {
        print("tunnel-server: the tunnel engine is not implemented yet; this build only carries the wire protocol library.")
        throw ExitCode(2)
    }
}
