#if canImport(Glibc)
import Glibc
#endif

/// The login name of a local user id, for messages that name who tried or
/// who owns a file; nil when the user database has no entry for it.
enum SystemUserName {
    static func of(_ uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let found = result, let name = found.pointee.pw_name else {
            return nil
        }
        return String(cString: name)
    }
}
