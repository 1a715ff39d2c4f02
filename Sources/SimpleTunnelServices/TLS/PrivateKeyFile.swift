#if canImport(Glibc)
import Glibc
#endif

/// A private key file is refused when its permissions let anyone but its
/// owner in, as ssh refuses an "UNPROTECTED PRIVATE KEY FILE": other users
/// of the machine could read it and impersonate the server (or client).
enum PrivateKeyFile {
    /// Throws when `path` has any group or other permission bits. A file that
    /// cannot be examined is left to the read that follows, which says why.
    static func checkPermissions(_ path: String) throws(TLSError) {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let octal = String(mode, radix: 8)
            throw .invalidConfiguration(
                "UNPROTECTED PRIVATE KEY FILE: \(path) has permissions 0\(String(repeating: "0", count: 3 - octal.count))\(octal), so other users "
                    + "of this machine can read it; make it private with: chmod 600 \(path)")
        }
    }
}
