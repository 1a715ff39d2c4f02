import ArgumentParser
import Logging
import SimpleTunnelServices

/// The options of a serving process that the launch does not read: `serve`
/// and `check` both take them, so that a unit's one option line works for both.
struct ServeProcessOptions: ParsableArguments {
    @Option(help: "Serve Prometheus metrics at http://ADDR:PORT/metrics (off by default).")
    var metrics: String?

    @Flag(name: .customLong("metrics-per-login"), help: "Also count bytes by login in the metrics (simpletunnel_login_bytes_total), updated at each usage flush; one series per login, so off by default.")
    var metricsPerLogin = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Control socket for `tunnel-server status`, `kick` and `reload`, answered for root and the server's user only. Default: /run/simpletunnel/server.sock as root, else $XDG_RUNTIME_DIR/simpletunnel/server.sock or /tmp/simpletunnel-UID/server.sock.")
    var control: String?

    @Option(name: .customLong("run-as"), help: "Once the TUN device, routes and listeners are set up, become this user, keeping only CAP_NET_ADMIN (start as root).")
    var runAs: String?

    func check() throws {
        if metricsPerLogin, metrics == nil {
            throw ValidationError("--metrics-per-login adds to the metrics: give --metrics ADDR:PORT too")
        }
        if let metrics {
            do { _ = try TunnelEndpoint(parsing: metrics) } catch { throw ValidationError("--metrics \(error)") }
        }
        if let runAs {
            do { _ = try Privileges.account(named: runAs) } catch { throw ValidationError("\(error)") }
        }
    }
}
