import Foundation

extension NetworkUndoJournal {
    /// Root's journals go beside its control socket, in /run (a tmpfs: a
    /// reboot, which also takes the routes, takes them too), and not under
    /// `$XDG_RUNTIME_DIR`: the client unit's RuntimeDirectory= is removed when
    /// it stops, crash included, before the restart could read it.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment, userID: uid_t = getuid()) -> String {
        userID == 0 ? ControlProtocol.rootFolder : ControlFraming.userRuntimeFolder(environment: environment, userID: userID)
    }
}
