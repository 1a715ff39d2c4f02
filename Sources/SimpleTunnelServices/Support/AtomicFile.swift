#if canImport(Glibc)
import Glibc
#endif

/// Writes a file whole, then renames it into place: a crash never leaves half
/// a file, and the file is created with its final mode, so a secret is never
/// readable by others, even briefly.
enum AtomicFile {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func write(_ bytes: [UInt8], to path: String, permissions: mode_t) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard descriptor >= 0 else {
            throw Failure(description: "cannot create \(temporary): \(String(cString: strerror(errno)))")
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
