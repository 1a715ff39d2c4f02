#if canImport(Glibc)
import Glibc
#endif

/// What a control socket's folder is, as `lstat` saw it, and whether a socket
/// may go in it. Whoever may write to the folder may swap the socket for a
/// fake one (a root `tunnel-client stop` would then be answered by a stranger)
/// or for a symbolic link, so the folder must be a real directory that only
/// trusted users can write to.
struct ControlSocketFolder: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        case directory, symbolicLink, other
    }

    var path: String
    var kind: Kind
    var ownerID: uid_t
    var mode: mode_t

    /// Trusted owners are this process's effective user, root (root could
    /// replace the socket anyway: /run/simpletunnel made by hand or by an older
    /// version) and, when root starts a service that becomes `serviceUser`,
    /// that user (the folder created for it, or systemd's RuntimeDirectory=, is
    /// theirs, and they are handed the socket anyway). No one else may write:
    /// group and other write bits refuse it. Read and search bits for others
    /// are harmless (the socket itself is 0600), so a 0755 folder of one's own
    /// is fine; ssh-agent and tmux want 0700, which is what we create.
    func refusal(effectiveUser: uid_t, serviceUser: uid_t? = nil) -> ControlSocketFolderError? {
        switch kind {
        case .symbolicLink: return .symbolicLink(path)
        case .other: return .notADirectory(path)
        case .directory: break
        }
        let trusted = ownerID == effectiveUser || ownerID == 0 || (effectiveUser == 0 && ownerID == serviceUser)
        guard trusted else { return .foreignOwner(path, owner: ownerID, you: effectiveUser) }
        guard mode & 0o022 == 0 else { return .writableByOthers(path, mode: mode & 0o7777) }
        return nil
    }

    /// The folder at `path` without following a final symbolic link, or nil when there is none.
    static func examine(_ path: String) throws(ControlSocketFolderError) -> ControlSocketFolder? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            throw .unreadable(path, reason: String(cString: strerror(errno)))
        }
        return ControlSocketFolder(status, path: path)
    }

    init(path: String, kind: Kind, ownerID: uid_t, mode: mode_t) {
        self.path = path
        self.kind = kind
        self.ownerID = ownerID
        self.mode = mode
    }

    init(_ status: stat, path: String) {
        let type = status.st_mode & S_IFMT
        self.init(
            path: path, kind: type == S_IFDIR ? .directory : type == S_IFLNK ? .symbolicLink : .other,
            ownerID: status.st_uid, mode: status.st_mode)
    }
}

/// A control socket's folder that will not do, and what to do about it.
public enum ControlSocketFolderError: Error, Equatable, CustomStringConvertible {
    case symbolicLink(String)
    case notADirectory(String)
    case foreignOwner(String, owner: uid_t, you: uid_t)
    case writableByOthers(String, mode: mode_t)
    case unreadable(String, reason: String)
    case cannotCreate(String, reason: String)
    /// The folder was replaced between the check and its opening.
    case changed(String)

    private static let remedy = "give --control PATH in a folder of your own"

    public var description: String {
        switch self {
        case .symbolicLink(let path): return "\(path) is a symbolic link, not a folder: remove it, or \(Self.remedy)"
        case .notADirectory(let path): return "\(path) is not a folder: remove it, or \(Self.remedy)"
        case .foreignOwner(let path, let owner, let you):
            return "\(path) is owned by uid \(owner), not you (\(you)): remove it, or \(Self.remedy)"
        case .writableByOthers(let path, let mode):
            return "\(path) may be written by other users (mode 0\(String(mode, radix: 8))): `chmod 700 \(path)`, or \(Self.remedy)"
        case .unreadable(let path, let reason): return "cannot examine \(path): \(reason); \(Self.remedy)"
        case .cannotCreate(let path, let reason): return "cannot create the folder \(path): \(reason); \(Self.remedy)"
        case .changed(let path): return "\(path) was replaced while it was checked: try again, or \(Self.remedy)"
        }
    }
}
