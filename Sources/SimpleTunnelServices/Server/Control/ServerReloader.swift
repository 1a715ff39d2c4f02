import Logging
import NIOConcurrencyHelpers

/// Reads the users file and the settings again, whoever asks (SIGHUP, or the
/// control socket's `reload`): one reload at a time, each against what the
/// last one left running. Each part is taken whole or not at all.
public final class ServerReloader: Sendable {
    private let server: TunnelServer
    private let usersFile: UsersFile?
    private let configuration: ConfigurationReload?
    private let ipLayer: ServerIPLayer?
    private let logger: Logger
    /// The launch the server now runs with, for comparing with the next reload.
    private let running: NIOLockedValueBox<TunnelServerLaunch?>

    public init(server: TunnelServer, usersFile: UsersFile?, configuration: ConfigurationReload?, ipLayer: ServerIPLayer?, logger: Logger) {
        self.server = server
        self.usersFile = usersFile
        self.configuration = configuration
        self.ipLayer = ipLayer
        self.logger = logger
        self.running = NIOLockedValueBox(configuration?.running)
    }

    /// Reads the files (a few milliseconds) under the lock, so two requests never interleave.
    public func reload() -> ServerReloadReport {
        running.withLockedValue { running in
            var report = ServerReloadReport()
            if let usersFile {
                report.parts.append(server.reloadUsers(from: usersFile, logger: logger))
            }
            if let configuration, let current = running {
                let outcome = server.reloadSettings(running: current, reread: configuration.reread, ipLayer: ipLayer, logger: logger)
                running = outcome.running
                report.parts.append(outcome.report)
            }
            if report.parts.isEmpty {
                logger.notice("reload: nothing to reload (the server was started without a way to read its settings again)")
            }
            return report
        }
    }
}
