import ArgumentParser
import Foundation
import Logging
import SimpleTunnelServices

/// A synchronous entry point, so the main thread lives on (see `BlockingMain`).
@main
enum TunnelServerMain {
    static func main() {
        MallocTuning.apply()
        // A parent may hand SIGHUP down blocked; it reloads the users file. Threads started later inherit this.
        var hangup = sigset_t()
        sigemptyset(&hangup)
        sigaddset(&hangup, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangup, nil)
        let arguments = AppleCommandLine.rewritten(Array(CommandLine.arguments.dropFirst()))
        if let error = AppleCommandLine.misspeltSubcommand(arguments, subcommands: ["serve", "check", "passwd", "profile", "status", "kick", "reload", "usage"]) {
            StandardError.write((error + "\n  See 'tunnel-server --help' for the subcommands.\n"))
            exit(64)
        }
        BlockingMain.run { await TunnelServerCommand.main(arguments) }
    }
}

struct TunnelServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel-server",
        abstract: "Serve SimpleTunnel tunnels over TLS: TCP and UDP flows to real destinations, and an IP layer over TUN.",
        discussion: "Without a subcommand it serves: `tunnel-server serve --help` lists the options (--port, --config, --cert, --users, --tun, --run-as, ...).",
        version: SimpleTunnelVersion.current,
        subcommands: [Serve.self, Check.self, Passwd.self, Profile.self, ServerStatus.self, Kick.self, Reload.self, Usage.self],
        defaultSubcommand: Serve.self
    )
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
