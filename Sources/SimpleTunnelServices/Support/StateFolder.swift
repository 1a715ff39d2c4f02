import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The folder a server keeps what it writes while serving (`leases.json`).
/// Checked once at start, as the user the server serves as (after `--run-as`):
/// a folder that cannot take a file would otherwise surface only as lost
/// leases after the next restart.
public enum StateFolder {
    /// Creates `path` (0700) when missing, then creates and removes a file in
    /// it, so permissions, a read-only mount and ownership all count as a real write would.
    public static func checkWritable(_ path: String) throws(StateFolderError) {
        let user = currentUser()
        if let failure = makeFolder(path) {
            throw StateFolderError(path: path, user: user, reason: "cannot create \(failure.path): \(String(cString: strerror(failure.number)))", errorNumber: failure.number)
        }
        let probe = path + "/.write-check-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let number = errno
            throw StateFolderError(path: path, user: user, reason: String(cString: strerror(number)), errorNumber: number)
        }
        close(descriptor)
        unlink(probe)
    }

    /// `mkdir -p` with mode 0700; the folder that could not be made and why, or nil.
    private static func makeFolder(_ path: String) -> (path: String, number: Int32)? {
        var status = stat()
        if stat(path, &status) == 0 { return nil }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path, let failure = makeFolder(parent) { return failure }
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return nil }
        return (path, errno)
    }

    /// The name (and uid) of the user this process runs as now.
    static func currentUser() -> String {
        let uid = geteuid()
        return SystemUserName.of(uid).map { "\($0) (uid \(uid))" } ?? "uid \(uid)"
    }
}

public struct StateFolderError: Error, CustomStringConvertible {
    public let path: String
    /// Who tried: the user the server serves as.
    public let user: String
    public let reason: String
    let errorNumber: Int32?

    public var description: String {
        let advice: String
        switch errorNumber {
        case EROFS:
            advice = "it is on a read-only file system: remount it read-write or give --state-directory a writable folder"
        case ENOSPC, EDQUOT:
            advice = "its file system is full: free space there or give --state-directory another folder"
        default:
            advice = "give --state-directory a folder this user owns (chown it, or a systemd StateDirectory=)"
        }
        return "the state folder \(path) cannot be written by \(user), the user the server runs as: \(reason); \(advice)"
    }
}
