import Foundation
import NIOCore

/// A socket that could not be bound, said the way a user fixes it:
/// "cannot listen on 127.0.0.1:8080: address already in use".
public struct ListenError: Error, CustomStringConvertible, Sendable {
    /// host:port as given (`[::1]:8080` for IPv6).
    public let address: String
    public let reason: String
    /// The errno of the failed call, when there was one (EADDRINUSE, EACCES, ...).
    public let errnoCode: Int32?

    public var description: String { "cannot listen on \(address): \(reason)" }

    init(host: String, port: Int, underlying: any Error) {
        address = TunnelEndpoint(host: host, port: port).description
        if let ioError = underlying as? IOError {
            errnoCode = ioError.errnoCode
            reason = String(cString: strerror(ioError.errnoCode)).lowercased() + Self.hint(ioError.errnoCode, port: port)
        } else {
            errnoCode = nil
            reason = "\(underlying)"
        }
    }

    private static func hint(_ code: Int32, port: Int) -> String {
        switch code {
        case EADDRINUSE: return " (another program, or another copy of this one, uses it; pick another port or stop that program)"
        case EACCES where port < 1024: return " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
        case EADDRNOTAVAIL: return " (no interface of this machine has that address)"
        default: return ""
        }
    }
}

extension EventLoopFuture where Value == Channel {
    /// A failed bind becomes a `ListenError` naming `host:port`.
    func namingListenAddress(host: String, port: Int) -> EventLoopFuture<Channel> {
        flatMapErrorThrowing { error in throw ListenError(host: host, port: port, underlying: error) }
    }
}
