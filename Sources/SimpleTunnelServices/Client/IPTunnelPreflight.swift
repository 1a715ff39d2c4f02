import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `tunnel-client ip` needs before it connects: a TUN device name the
/// kernel accepts, the right to create the device, and /dev/net/tun. Checked
/// first, so that a mistake fails at once with its one reason, instead of
/// after the server has leased an address (or, with no server, never).
public enum IPTunnelPreflight {
    /// Whether this process can open /dev/net/tun.
    public enum DeviceAccess: Equatable, Sendable {
        case usable
        case missing
        case refused(errno: Int32)
    }

    /// The facts the decision rests on, gathered by `check`.
    public struct Facts: Equatable, Sendable {
        public var hasNetAdmin: Bool
        public var device: DeviceAccess

        public init(hasNetAdmin: Bool, device: DeviceAccess) {
            self.hasNetAdmin = hasNetAdmin
            self.device = device
        }
    }

    /// Linux interface names are at most 15 bytes (IFNAMSIZ less the terminator).
    static let maximumNameLength = 15

    /// The one reason `tunnel-client ip --tun deviceName` cannot work here, or nil.
    public static func problem(deviceName name: String, facts: Facts) -> IPTunnelPreflightError? {
        if let nameProblem = problem(deviceName: name) {
            return IPTunnelPreflightError("--tun \(name): \(nameProblem)")
        }
        guard facts.hasNetAdmin else {
            return IPTunnelPreflightError(
                "tunnel-client ip creates a TUN device, which needs root or CAP_NET_ADMIN: run it with sudo")
        }
        switch facts.device {
        case .usable:
            return nil
        case .missing:
            return IPTunnelPreflightError("/dev/net/tun does not exist: load the tun module (`sudo modprobe tun`)")
        case .refused(let code):
            return IPTunnelPreflightError("cannot open /dev/net/tun: \(String(cString: strerror(code))) (a container may need --device /dev/net/tun)")
        }
    }

    /// Why the kernel would refuse this interface name or pattern, or nil.
    static func problem(deviceName name: String) -> String? {
        if name.isEmpty { return "give an interface name, or a pattern such as stun%d" }
        if name.utf8.count > maximumNameLength {
            return "\(name.utf8.count) bytes long; Linux interface names are at most \(maximumNameLength)"
        }
        if name == "." || name == ".." || name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace }) {
            return "an interface name cannot contain '/', ':' or spaces, nor be '.' or '..'"
        }
        let percents = name.split(separator: "%", omittingEmptySubsequences: false).dropFirst()
        if percents.count > 1 || percents.contains(where: { !$0.hasPrefix("d") }) {
            return "a pattern holds exactly one %d, and no other %"
        }
        return nil
    }

    /// Gathers the facts for this process and throws the problem, if any.
    public static func check(deviceName: String) throws(IPTunnelPreflightError) {
        let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let facts = Facts(hasNetAdmin: status.map(hasNetAdmin(procStatus:)) ?? (geteuid() == 0), device: deviceAccess())
        if let problem = problem(deviceName: deviceName, facts: facts) { throw problem }
    }

    /// Whether CAP_NET_ADMIN (bit 12) is in the effective set of a /proc/PID/status text.
    static func hasNetAdmin(procStatus: String) -> Bool {
        guard let line = procStatus.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << 12) != 0
    }

    private static func deviceAccess() -> DeviceAccess {
        let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
        guard fd < 0 else {
            close(fd)
            return .usable
        }
        let code = errno
        return code == ENOENT || code == ENODEV || code == ENXIO ? .missing : .refused(errno: code)
    }
}

/// `tunnel-client ip` cannot work here; the message says the one thing to change.
public struct IPTunnelPreflightError: Error, Equatable, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
