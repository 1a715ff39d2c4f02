import ArgumentParser
import Foundation
import Logging
import SimpleTunnelServices

/// A synchronous entry point, so the main thread lives on (see `BlockingMain`).
@main
enum TunnelClientMain {
    static func main() {
        MallocTuning.apply()
        var arguments = DNSMode.rewritingBareFlag(Array(CommandLine.arguments.dropFirst()))
        do {
            if let expanded = try ClientProfile.expanding(arguments) { arguments = expanded }
        } catch {
            StandardError.write("tunnel-client: \(error)\n")
            exit(64)
        }
        let parsed = arguments
        BlockingMain.run { await TunnelClientCommand.main(parsed) }
    }
}

struct TunnelClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-client",
        abstract: "Open a SimpleTunnel tunnel and offer it locally: port forwards, a SOCKS5 proxy, the server's configuration.",
        discussion: "Every subcommand also takes --profile FILE (from `tunnel-server profile`): its server, pin, login and DNS mode, which options given after it override.",
        version: SimpleTunnelVersion.current,
        subcommands: [Forward.self, Socks.self, IP.self, Config.self, Status.self, Stop.self, Cleanup.self]
    )
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
