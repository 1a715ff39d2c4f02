import CTUNShims
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// `--run-as USER`: once the TUN device, routes and listeners are set up,
/// the process becomes USER for good. Only the capabilities kept (CAP_NET_ADMIN,
/// for changing and undoing network settings later) remain, on one thread
/// that does all such work from then on.
public enum Privileges {
    public enum Capability: Int, Sendable, CustomStringConvertible {
        /// Addresses, routes, links: changing and undoing network settings.
        case netAdmin = 12
        /// Writing root's files, such as /etc/resolv.conf when restoring it.
        case dacOverride = 1

        public var description: String {
            switch self {
            case .netAdmin: return "CAP_NET_ADMIN"
            case .dacOverride: return "CAP_DAC_OVERRIDE"
            }
        }
    }

    /// The user a process runs as after the drop.
    public struct Account: Sendable, Equatable {
        public var name: String
        public var uid: uid_t
        public var gid: gid_t
    }

    private static let keeper = NIOLockedValueBox<PrivilegedThread?>(nil)

    /// Looks `name` up in the user database; a clear error when it does not exist.
    public static func account(named name: String) throws(PrivilegeError) -> Account {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        let status = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
        guard status == 0, let found = result else {
            throw PrivilegeError(
                "no such user \(name); create it as a system user with `useradd --system --no-create-home --shell /usr/sbin/nologin \(name)` "
                    + "(the Debian package creates simpletunnel)")
        }
        return Account(name: name, uid: found.pointee.pw_uid, gid: found.pointee.pw_gid)
    }

    /// Becomes `account`, keeping `capabilities` on the privileged thread. Needs root; cannot be undone.
    public static func drop(to account: Account, keeping capabilities: Set<Capability>) throws(PrivilegeError) {
        guard geteuid() == 0 else {
            throw PrivilegeError("--run-as \(account.name) needs the program to start as root")
        }
        guard account.uid != 0 else {
            throw PrivilegeError("--run-as \(account.name): that is root; give an unprivileged user")
        }
        keeper.withLockedValue { keeper in
            if keeper == nil { keeper = PrivilegedThread() }
        }
        let mask = capabilities.reduce(UInt32(0)) { $0 | (1 << UInt32($1.rawValue)) }
        try run { () throws(PrivilegeError) in
            var step: Int32 = 0
            var error: Int32 = 0
            guard st_drop_privileges(account.uid, account.gid, mask, &step, &error) == 0 else {
                let what = ["", "keeping capabilities", "setting the groups", "setting the group", "setting the user",
                            "setting the capabilities", "raising ambient capabilities", "checking root cannot be regained"]
                let name = Int(step) < what.count ? what[Int(step)] : "step \(step)"
                throw PrivilegeError("--run-as \(account.name): \(name) failed: \(String(cString: strerror(error)))")
            }
        }
    }

    /// Runs `body` where the kept capabilities are (the privileged thread
    /// after a drop; the calling thread otherwise). Blocks.
    static func run<Success, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> Success) throws(Failure) -> Success {
        guard let thread = keeper.withLockedValue({ $0 }) else { return try body() }
        return try thread.run { () -> Result<Success, Failure> in
            do throws(Failure) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }.get()
    }
}

public struct PrivilegeError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
