#if canImport(Glibc)
import Glibc
#endif

/// Why this process may not read the users file, in the terms that fix it:
/// whose the file is and who asked. The usual cause is a file root rewrote
/// (and so owns) for a server that runs as a service user.
public struct UsersFileDenial: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var owner: Account
    public var mode: mode_t
    /// The user this process runs as.
    public var reader: Account
    /// Set when it is a folder on the way, not the file, that this process may
    /// not enter; `owner` and `mode` are then the folder's.
    public var folder: String?

    public struct Account: Hashable, Sendable, CustomStringConvertible {
        public var id: uid_t
        public var name: String?

        public var description: String { name ?? "uid \(id)" }

        static func named(_ id: uid_t) -> Account {
            Account(id: id, name: SystemUserName.of(id))
        }
    }

    public init(path: String, owner: Account, mode: mode_t, reader: Account, folder: String? = nil) {
        self.path = path
        self.owner = owner
        self.mode = mode
        self.reader = reader
        self.folder = folder
    }

    /// The denial when `path` exists and this process may not open it for reading; nil otherwise.
    init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor < 0 else {
            close(descriptor)
            return nil
        }
        guard errno == EACCES || errno == EPERM else { return nil }
        var status = stat()
        if stat(path, &status) == 0 {
            self.init(path: path, owner: .named(status.st_uid), mode: status.st_mode & 0o7777, reader: .named(geteuid()))
            return
        }
        // The file cannot even be looked at: the first folder on its way this process may not enter.
        var folder = ""
        for component in path.split(separator: "/").dropLast() {
            folder += "/" + component
            if access(folder, X_OK) != 0, stat(folder, &status) == 0 {
                self.init(
                    path: path, owner: .named(status.st_uid), mode: status.st_mode & 0o7777, reader: .named(geteuid()), folder: folder)
                return
            }
        }
        return nil
    }

    public var description: String {
        let octal = String(mode, radix: 8)
        let mode = String(repeating: "0", count: max(0, 4 - octal.count)) + octal
        let who = reader.name.map { "\($0) (uid \(reader.id))" } ?? "uid \(reader.id)"
        if let folder {
            return "cannot read \(path): tunnel-server runs as \(who), which may not enter \(folder) (owned by \(owner), mode \(mode));"
                + " keep the file in a folder \(reader.name ?? "that user") can enter, such as /etc/simpletunnel"
        }
        return "cannot read \(path): it is owned by \(owner) (mode \(mode)) and tunnel-server runs as \(who);"
            + " run `chown \(reader.name ?? String(reader.id)) \(path)`"
    }
}
