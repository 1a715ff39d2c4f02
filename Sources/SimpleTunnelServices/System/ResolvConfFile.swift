import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads and rewrites a resolv.conf in place, so that a symlink (to
/// systemd's stub file) or a bind mount (containers) stays what it is, and
/// restores the exact original bytes afterwards.
struct ResolvConfFile: Sendable, Hashable {
    let path: String

    /// What to put back: the bytes, or nil when the file did not exist, and
    /// the directory we had to create for it, if any.
    struct Backup: Sendable, Hashable {
        let path: String
        let original: [UInt8]?
        let createdDirectory: String?
    }

    /// Saves the current contents, then replaces them (where the process's capabilities are).
    func replace(with contents: String) throws(NetworkConfigurationError) -> Backup {
        let file = self
        return try Privileges.run { () throws(NetworkConfigurationError) in try file.replaceHere(with: contents) }
    }

    private func replaceHere(with contents: String) throws(NetworkConfigurationError) -> Backup {
        let original = try read()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var createdDirectory: String?
        if !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .fileAccessFailed(path: directory, operation: "create", reason: "\(error)")
            }
            createdDirectory = directory
        }
        try Self.write(Array(contents.utf8), to: path)
        return Backup(path: path, original: original, createdDirectory: createdDirectory)
    }

    /// The file's bytes, or nil when it does not exist.
    func read() throws(NetworkConfigurationError) -> [UInt8]? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .fileAccessFailed(path: path, operation: "read", reason: errnoText(errno))
        }
        return Array(data)
    }

    /// Restores where the process's capabilities are (one thread after `--run-as`).
    static func restore(_ backup: Backup) throws(NetworkConfigurationError) {
        try Privileges.run { () throws(NetworkConfigurationError) in try restoreHere(backup) }
    }

    private static func restoreHere(_ backup: Backup) throws(NetworkConfigurationError) {
        if let original = backup.original {
            try write(original, to: backup.path)
            return
        }
        if unlink(backup.path) != 0 && errno != ENOENT {
            throw .fileAccessFailed(path: backup.path, operation: "remove", reason: errnoText(errno))
        }
        // Only if still empty: someone else may have put files there since.
        if let directory = backup.createdDirectory { rmdir(directory) }
    }

    /// Truncates and writes through any symlink, keeping the inode.
    private static func write(_ bytes: [UInt8], to path: String) throws(NetworkConfigurationError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .fileAccessFailed(path: path, operation: "write", reason: errnoText(errno)) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .fileAccessFailed(path: path, operation: "write", reason: errnoText(errno)) }
            offset += count
        }
    }
}
