import Logging

extension TunnelServer {
    /// SIGHUP: reads the users file again. Taken whole, it lets added users in
    /// and ends the tunnels of removed ones at once; a changed password keeps
    /// its tunnel (it logged in rightly). A file that cannot be read, parsed or
    /// is unprotected changes nothing, and the log says why.
    @discardableResult
    public func reloadUsers(from file: UsersFile, logger: Logger) -> ServerReloadReport.Part {
        let change: UsersFile.Change
        do {
            change = try file.reload()
        } catch {
            let summary = "keeping the \(file.users.users.count) users it had: \(error)"
            logger.error("users file not reloaded, \(summary)", metadata: ["users": "\(file.path)"])
            return .init(name: "users file", applied: false, summary: summary)
        }
        let ended = endTunnels(notIn: file.users)
        let metadata: Logger.Metadata = [
            "users": "\(file.path)", "added": "\(Self.logins(change.added))", "removed": "\(Self.logins(change.removed))",
            "password-changed": "\(Self.logins(change.passwordChanged))", "tunnels-ended": "\(ended)",
        ]
        logger.notice("users file reloaded", metadata: metadata)
        let summary = ["added", "removed", "password-changed", "tunnels-ended"].map { "\($0)=\(metadata[$0].map { "\($0)" } ?? "")" }
        return .init(name: "users file", applied: true, summary: "reloaded \(file.path): " + summary.joined(separator: " "))
    }

    private static func logins(_ logins: [String]) -> String {
        logins.map { PeerText.quoted($0, limit: 64) }.joined(separator: ",")
    }
}

extension TunnelServer {
    /// SIGHUP: the settings merged again from defaults, file and command line.
    /// What can change live is applied to new connections (and the destination
    /// rules to every tunnel's next flow and packet); what cannot is kept and
    /// named. One that does not load changes nothing. Returns what now runs.
    public func reloadSettings(
        running: TunnelServerLaunch, reread: () throws -> TunnelServerLaunch, ipLayer: ServerIPLayer?, logger: Logger
    ) -> (running: TunnelServerLaunch, report: ServerReloadReport.Part) {
        func refused(_ reason: String) -> (running: TunnelServerLaunch, report: ServerReloadReport.Part) {
            logger.error("configuration not reloaded, the server keeps every setting it had: \(reason)")
            return (running, .init(name: "configuration", applied: false, summary: "the server keeps every setting it had: \(reason)"))
        }
        let fresh: TunnelServerLaunch
        do {
            fresh = try reread()
        } catch {
            return refused("\(error)")
        }
        // The safety rules were derived for the address the reread was told of; for any other, nothing derived from it holds.
        guard fresh.settings.host == running.settings.host else {
            return refused("the settings were read for \(fresh.settings.host), but the server listens on \(running.settings.host)")
        }
        let reload = ServerSettingsReload(running: running, serving: servingSettings, reread: fresh)
        apply(reload)
        ipLayer?.update(configuration: reload.configuration, policy: reload.policy)
        for warning in fresh.warnings {
            logger.warning("\(warning)")
        }
        let changed = reload.applied.isEmpty ? "nothing" : reload.applied.joined(separator: "; ")
        var metadata: Logger.Metadata = ["changed": "\(changed)"]
        var summary = "changed \(changed)"
        // The certificate files are read again whatever they hold: a renewal is served from the next connection on.
        if reload.settings.tls != nil { metadata["certificate"] = "read again" }
        if reload.needsRestart.isEmpty {
            logger.notice("configuration reloaded", metadata: metadata)
        } else {
            let kept = reload.needsRestart.joined(separator: "; ")
            metadata["kept-until-restart"] = "\(kept)"
            summary += "; kept until a restart: \(kept)"
            logger.warning("configuration reloaded; some changes need a restart and were not applied", metadata: metadata)
        }
        // A renewed certificate ends the warning; one still near its end, or a client CA expired, is said again.
        logCertificateWarnings()
        if !reload.applied.isEmpty {
            logger.info("tunnels already open keep their limits and pushed configuration until they reconnect; every tunnel's next flow and packet meets the new destination rules")
        }
        return (reload.effective(running: running, reread: fresh), .init(name: "configuration", applied: true, summary: summary))
    }
}
