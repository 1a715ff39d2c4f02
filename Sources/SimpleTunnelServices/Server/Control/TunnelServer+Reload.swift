import Logging

extension TunnelServer {
    /// SIGHUP: reads the users file again. Taken whole, it lets added users in
    /// and ends the tunnels of removed ones at once; a changed password keeps
    /// its tunnel (it logged in rightly). A file that cannot be read, parsed or
    /// is unprotected changes nothing, and the log says why.
    @discardableResult
    public func reloadUsers(from file: UsersFile, logger: Logger) -> Bool {
        let change: UsersFile.Change
        do {
            change = try file.reload()
        } catch {
            logger.error("users file not reloaded, keeping the \(file.users.users.count) users it had: \(error)", metadata: ["users": "\(file.path)"])
            return false
        }
        let ended = endTunnels(notIn: file.users)
        logger.notice(
            "users file reloaded",
            metadata: [
                "users": "\(file.path)", "added": "\(Self.logins(change.added))", "removed": "\(Self.logins(change.removed))",
                "password-changed": "\(Self.logins(change.passwordChanged))", "tunnels-ended": "\(ended)",
            ])
        return true
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
    ) -> TunnelServerLaunch {
        let fresh: TunnelServerLaunch
        do {
            fresh = try reread()
        } catch {
            logger.error("configuration not reloaded, the server keeps every setting it had: \(error)")
            return running
        }
        let reload = ServerSettingsReload(running: running, reread: fresh)
        apply(reload)
        ipLayer?.update(configuration: reload.configuration, policy: reload.policy)
        for warning in fresh.warnings {
            logger.warning("\(warning)")
        }
        var metadata: Logger.Metadata = ["changed": "\(reload.applied.isEmpty ? "nothing" : reload.applied.joined(separator: "; "))"]
        // The certificate files are read again whatever they hold: a renewal is served from the next connection on.
        if reload.settings.tls != nil { metadata["certificate"] = "read again" }
        if reload.needsRestart.isEmpty {
            logger.notice("configuration reloaded", metadata: metadata)
        } else {
            metadata["kept-until-restart"] = "\(reload.needsRestart.joined(separator: "; "))"
            logger.warning("configuration reloaded; some changes need a restart and were not applied", metadata: metadata)
        }
        if !reload.applied.isEmpty {
            logger.info("tunnels already open keep their limits and pushed configuration until they reconnect; every tunnel's next flow and packet meets the new destination rules")
        }
        return reload.effective(running: running, reread: fresh)
    }
}
