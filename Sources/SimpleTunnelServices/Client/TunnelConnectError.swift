import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The server could not be reached at all, said the way `ssh` says it.
public struct TunnelConnectError: Error, CustomStringConvertible {
    public var description: String

    /// NIO's connect errors, made readable: "cannot connect to HOST:PORT: Connection refused".
    init(_ error: Error, host: String, port: Int) {
        let server = TunnelEndpoint(host: host, port: port)
        description = "cannot connect to \(server): \(Self.reason(error))"
    }

    private static func reason(_ error: Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            if let attempt = error.connectionErrors.first {
                return reason(attempt.error)
            }
            if let dns = error.dnsAError ?? error.dnsAAAAError {
                return "the name does not resolve (\(dns))"
            }
            return "no address to connect to"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode))
        case ChannelError.connectTimeout(let timeout):
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        default:
            return "\(error)"
        }
    }
}
