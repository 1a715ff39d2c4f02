/// A host and port as the protocol carries them: the destination of a TCP
/// `open`, or the far end of a UDP datagram in `data`.
public struct TunnelEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// A host name or an IP literal, 1 to 253 bytes.
    public var host: String
    /// 1 to 65535.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String {
        // A byte search: String.contains(String) goes through Foundation and costs microseconds.
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
