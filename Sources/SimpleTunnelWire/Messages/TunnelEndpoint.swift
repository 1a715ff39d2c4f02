/// A host and port as the protocol carries them: the destination of a TCP
/// `open`, or the far end of a UDP datagram in `data`.
public struct TunnelEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// A host name or an IP literal, 1 to 253 bytes.
    public var host: String
    /// 1 to 65535.
    public var port: Int

    /// For a host this program already holds as valid (its own listener, a
    /// resolved address). Anything a peer or a user wrote goes through
    /// `init(validatingHost:port:)`.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// A host a peer or a user wrote, checked by `TunnelHostSyntax` and a port
    /// checked to be 1 to 65535.
    public init(validatingHost host: String, port: Int) throws(TunnelEndpointError) {
        if let problem = TunnelHostSyntax.problem(with: host) {
            throw .invalidHost(host: host, reason: problem)
        }
        guard (1...65535).contains(port) else { throw .invalidPort(port) }
        self.init(host: host, port: port)
    }

    public var description: String {
        // A byte search: String.contains(String) goes through Foundation and costs microseconds.
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Why a host and port cannot be a destination.
public enum TunnelEndpointError: Error, Hashable, CustomStringConvertible {
    case invalidHost(host: String, reason: String)
    case invalidPort(Int)

    public var description: String {
        switch self {
        case .invalidHost(let host, let reason):
            return "host \(PeerText.quoted(host, limit: 64)) is not a DNS name or an IP literal: \(reason)"
        case .invalidPort(let port):
            return "port \(port) is outside 1-65535"
        }
    }
}
