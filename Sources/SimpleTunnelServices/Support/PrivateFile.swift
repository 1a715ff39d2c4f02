#if canImport(Glibc)
import Glibc
#endif

/// A file of secrets (a private key, the users file, the database password)
/// is refused when its permissions let anyone but its owner in, as ssh refuses
/// an "UNPROTECTED PRIVATE KEY FILE": other users of the machine could read it.
public enum PrivateFile {
    /// Why `path` is not private, said so that its owner can fix it (`what`
    /// names the file, e.g. "UNPROTECTED PRIVATE KEY FILE"); nil when only its
    /// owner may use it, or when it cannot be examined: the read that follows says why.
    public static func exposure(of path: String, what: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 != 0 else { return nil }
        let octal = String(mode, radix: 8)
        return "\(what): \(path) has permissions 0\(String(repeating: "0", count: max(0, 3 - octal.count)))\(octal), so other users "
            + "of this machine can read it; make it private with: chmod 600 \(path)"
    }
}
