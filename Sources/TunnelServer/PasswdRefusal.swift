import Foundation
import SimpleTunnelServices

/// Why `passwd` changed nothing, in one line: unlike a ValidationError, no
/// usage text follows, since the command line itself was fine.
struct PasswdRefusal: Error, CustomStringConvertible {
    var description: String

    /// At least this many characters, unless --allow-short.
    static let minimumPasswordLength = 8

    /// Why `password` will not do, or nil.
    static func weakness(of password: String, allowShort: Bool) -> PasswdRefusal? {
        if password.isEmpty { return PasswdRefusal(description: "the password is empty; nothing was changed") }
        guard !allowShort, password.count < minimumPasswordLength else { return nil }
        return PasswdRefusal(
            description: "the password has \(password.count) characters, fewer than \(minimumPasswordLength); choose a longer one (or give --allow-short)")
    }

    /// The users file belongs to someone other than --owner: rewriting it keeps its owner, so say so first.
    static func ownerMismatch(_ path: String, fileOwner: uid_t, owner: Privileges.Account) -> PasswdRefusal? {
        guard fileOwner != owner.uid else { return nil }
        let name = getpwuid(fileOwner).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        let current = name.map { "\($0) (uid \(fileOwner))" } ?? "uid \(fileOwner)"
        return PasswdRefusal(
            description: "\(path) belongs to \(current), not to --owner \(owner.name) (uid \(owner.uid)); nothing was changed:"
                + " give it with `chown \(owner.name) \(path)` first, or leave out --owner to keep its owner")
    }
}
