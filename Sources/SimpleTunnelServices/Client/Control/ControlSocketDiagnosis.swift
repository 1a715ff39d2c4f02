import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why `tunnel-client status` (or `stop`) got no answer, said so that the
/// user knows what to do. The common case is a client started with sudo:
/// its socket is root's, elsewhere and closed to other users.
public struct ControlSocketDiagnosis: Equatable, Sendable, CustomStringConvertible {
    public typealias Reach = ControlSocketReach

    /// The request asked for: `status` or `stop`.
    public var request: String
    public var path: String
    /// Whether `path` is the default one (no --control).
    public var isDefaultPath: Bool
    public var reach: Reach
    public var currentUser: uid_t
    /// The user owning the socket, or its folder when the socket cannot be seen.
    public var owner: (uid: uid_t, name: String)?
    /// Root's default socket, when its folder exists and this user is not root.
    public var rootSocket: String?

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.description == rhs.description }

    public var description: String {
        let otherOwner = owner.flatMap { $0.uid == currentUser ? nil : $0 }
        let sudo = "`sudo tunnel-client \(request)\(isDefaultPath ? "" : " --control \(path)")`"
        switch reach {
        case .notPermitted, .closedWithoutAnswer:
            if let otherOwner {
                return "the control socket \(path) belongs to \(otherOwner.name) (uid \(otherOwner.uid)), and its client answers only that user and root:"
                    + " ask as \(otherOwner.name), e.g. \(sudo)"
            }
            if reach == .closedWithoutAnswer, owner != nil {
                return "the tunnel-client on \(path) closed the connection without answering (is it stopping?)"
            }
            return "the control socket \(path) belongs to another user, and its client answers only that user and root: ask as that user, e.g. \(sudo)"
        case .nothingThere:
            if let rootSocket, isDefaultPath {
                return "no tunnel-client of yours answers on \(path); a client started with sudo answers on \(rootSocket), to root only:"
                    + " ask with `sudo tunnel-client \(request)`, or start the client with --control PATH and give this command the same --control PATH"
            }
            return "no tunnel-client answers on \(path) (is one running? one started with --control PATH answers there: give the same --control PATH)"
        }
    }

    /// Looks at the socket's path after a failed request.
    static func examine(request: String, path: String, isDefaultPath: Bool, reach: Reach) -> ControlSocketDiagnosis {
        let user = getuid()
        let folder = (path as NSString).deletingLastPathComponent
        let owner = ownerID(of: path) ?? ownerID(of: folder)
        let rootDefault = ControlProtocol.defaultPath(environment: [:], userID: 0)
        let rootFolder = (rootDefault as NSString).deletingLastPathComponent
        let rootSocket = user != 0 && ownerID(of: rootFolder) == 0 ? rootDefault : nil
        return ControlSocketDiagnosis(
            request: request, path: path, isDefaultPath: isDefaultPath, reach: reach, currentUser: user,
            owner: owner.map { ($0, userName($0)) }, rootSocket: rootSocket)
    }

    private static func ownerID(of path: String) -> uid_t? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_uid
    }

    private static func userName(_ uid: uid_t) -> String {
        SystemUserName.of(uid) ?? "uid \(uid)"
    }
}
