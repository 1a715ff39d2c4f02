#if canImport(Glibc)
import Glibc
#endif

/// Writes a file whole, then renames it into place: a crash never leaves half
/// a file, and the file is created with its final mode (or private until it
/// gets it), so a secret is never readable by others, even briefly.
enum AtomicFile {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// - Parameter keepingExisting: when the file is there, the new one gets
    ///   its owner, group and mode instead of `permissions` and this process's
    ///   user: a file root rewrites for a service stays readable by the service.
    static func write(_ bytes: [UInt8], to path: String, permissions: mode_t, keepingExisting: Bool = false) throws(Failure) {
        var existing = stat()
        let kept = keepingExisting && stat(path, &existing) == 0 ? existing : nil
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        // Created private; the existing file's mode is given once its owner is.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kept == nil ? permissions : 0o600)
        guard descriptor >= 0 else {
            throw Failure(description: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        if let kept {
            var created = stat()
            let needsOwner = fstat(descriptor, &created) != 0 || created.st_uid != kept.st_uid || created.st_gid != kept.st_gid
            if needsOwner, fchown(descriptor, kept.st_uid, kept.st_gid) != 0 {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw Failure(description: "cannot keep \(path)'s owner (uid \(kept.st_uid), gid \(kept.st_gid)): \(reason); run this as root or as its owner")
            }
            guard fchmod(descriptor, kept.st_mode & 0o7777) == 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw Failure(description: "cannot keep \(path)'s mode: \(reason)")
            }
        }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw Failure(description: "cannot write \(temporary): \(reason)")
            }
            written += count
        }
        fsync(descriptor)
        close(descriptor)
        if rename(temporary, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(description: "cannot rename \(temporary) to \(path): \(reason)")
        }
    }
}
