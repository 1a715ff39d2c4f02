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
