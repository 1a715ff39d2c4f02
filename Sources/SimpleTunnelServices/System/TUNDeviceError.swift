import Foundation

/// Why a TUN device could not be opened or used. Messages name the device
/// and carry the system's error text so the operator knows what to fix.
public enum TUNDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Opening /dev/net/tun or creating the interface failed.
    case openFailed(name: String, errno: Int32)
    /// The network namespace could not be entered.
    case namespaceUnavailable(namespace: String, errno: Int32)
    /// A helper resource (wake-up eventfd, control socket, reader thread) failed.
    case setupFailed(what: String, errno: Int32)
    /// Reading the interface's MTU failed (the interface may be gone).
    case mtuUnavailable(name: String, errno: Int32)

    public var description: String {
        switch self {
        case .openFailed(let name, let code):
            var hint = ""
            switch code {
            case EPERM, EACCES: hint = " (needs root or CAP_NET_ADMIN)"
            case ENOENT, ENODEV: hint = " (is the tun module loaded? try `modprobe tun`; /dev/net/tun must exist)"
            case EBUSY: hint = " (an interface with that name exists and is in use or is not a TUN device)"
            case ENAMETOOLONG: hint = " (interface names are at most 15 characters)"
            case EINVAL: hint = " (the kernel does not accept this name: no '/', ':' or spaces, and a pattern holds one %d)"
            default: break
            }
            return "could not create TUN device \"\(name)\": \(errnoText(code))\(hint)"
        case .namespaceUnavailable(let namespace, let code):
            return "could not enter network namespace \"\(namespace)\" (/var/run/netns/\(namespace)): \(errnoText(code)); create it with `ip netns add \(namespace)`"
        case .setupFailed(let what, let code):
            return "could not set up the TUN device's \(what): \(errnoText(code))"
        case .mtuUnavailable(let name, let code):
            return "could not read the MTU of \"\(name)\": \(errnoText(code))"
        }
    }
}

/// "Operation not permitted (errno 1)".
func errnoText(_ code: Int32) -> String {
    "\(String(cString: strerror(code))) (errno \(code))"
}
