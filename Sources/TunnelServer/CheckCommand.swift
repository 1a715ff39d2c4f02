import ArgumentParser
import Foundation
import Logging
import SimpleTunnelDatabase
import SimpleTunnelServices

/// `tunnel-server check`: loads everything a start would (the configuration
/// file, the users file, the certificate and key, the database's address and
/// password) and says whether `serve` with the same options would start,
/// like `nginx -t` and `sshd -t`. It binds nothing and sets up no device.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that `serve` with these options would start; exit 1 with the reason when it would not.",
        discussion: """
            Takes every option `serve` takes and reads what a start reads, without listening, \
            touching the network or connecting to the database. The package's unit runs it before \
            every start and every reload, so a bad edit fails `systemctl reload` and the running \
            server keeps its settings.
            """
    )

    @OptionGroup var options: TunnelServerLaunchOptions
    @OptionGroup var process: ServeProcessOptions

    func validate() throws {
        try process.check()
    }

    func run() async throws {
        let launch = try Self.launchAsAStartWould(options, refusal: "the configuration would not start")
        for warning in launch.warnings {
            StandardError.write("warning: \(warning)\n")
        }
        print("configuration OK: " + Self.summary(launch))
    }

    /// What `serve` with `options` would run with, read without a log (the
    /// caller prints what matters); exit 1 with `refusal` and the reason when it would not start.
    static func launchAsAStartWould(_ options: TunnelServerLaunchOptions, refusal: String) throws -> TunnelServerLaunch {
        let quiet = Logger(label: "tunnel-server") { _ in SwiftLogNoOpLogHandler() }
        do {
            return try Serve.prepareLaunch(
                options, openSharedStore: TunnelDatabase.opener, openFileLimit: OpenFileLimit.current()?.soft ?? 1024, logger: quiet)
        } catch {
            StandardError.write("tunnel-server: \(refusal): \(error)\n")
            throw ExitCode(1)
        }
    }

    static func summary(_ launch: TunnelServerLaunch) -> String {
        let settings = launch.settings
        let logins: String
        if let database = launch.database {
            logins = "logins in \(database)"
        } else if let users = launch.usersFile {
            logins = "\(users.users.users.count) users in \(users.path)"
        } else {
            logins = "no logins"
        }
        let tls = settings.tls == nil ? "no TLS (--plaintext)" : "TLS"
        let ip = launch.ipLayer == nil ? "no IP layer" : "IP layer on \(launch.ipLayer?.options.deviceName ?? "a TUN device")"
        return "listens on \(TunnelEndpoint(host: settings.host, port: settings.port)), \(tls), \(logins), \(ip)"
    }
}

/// `tunnel-server reload`: the running server reads its files again and says
/// what came of it; exit 1 when any part was not applied.
struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make the running server read its users file and configuration again, and say what changed (exit 1 when something was not applied).")

    @Option(help: "The running server's control socket (see `status --help`).")
    var control: String?

    func run() async throws {
        let response = try await ServerControlRequest.send(.init(type: "reload"), control: control)
        guard let report = response.reload else { throw ServerControlRequest.fail(response.error ?? "the server did not say what it reloaded") }
        if report.succeeded {
            print(report.text)
        } else {
            StandardError.write(report.text + "\n")
            throw ExitCode(1)
        }
    }
}
