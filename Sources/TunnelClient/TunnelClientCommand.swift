import ArgumentParser
import Logging
import SimpleTunnelServices

/// A synchronous entry point, so the main thread lives on (see `BlockingMain`).
@main
enum TunnelClientMain {
    static func main() {
        MallocTuning.apply()
        let arguments = DNSMode.rewritingBareFlag(Array(CommandLine.arguments.dropFirst()))
        BlockingMain.run { await TunnelClientCommand.main(arguments) }
    }
}

struct TunnelClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-client",
        abstract: "Open a SimpleTunnel tunnel and offer it locally: port forwards, a SOCKS5 proxy, the server's configuration.",
        version: SimpleTunnelVersion.current,
        subcommands: [Forward.self, Socks.self, IP.self, Config.self, Status.self, Stop.self]
    )
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
