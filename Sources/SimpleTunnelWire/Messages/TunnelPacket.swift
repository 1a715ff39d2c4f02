import NIOCore

/// One IP packet of a `packets` message with the protocol number sent beside it.
public struct TunnelPacket: Sendable, Hashable {
    /// `protocols` values as Apple's code writes them: Darwin's address families.
    public enum ProtocolNumber {
        public static let ipv4: Int64 = 2
        /// Darwin's AF_INET6 (Linux's is 10): this is what Apple's peers send.
        public static let ipv6: Int64 = 30
    }

    public enum IPVersion: Sendable, Hashable {
        case v4, v6
    }

    public var bytes: ByteBuffer
    /// As received: peers may send numbers we do not know, which is not an error.
    public var protocolNumber: Int64
    /// 0 for an ordinary packet. Otherwise a TCP super-packet whose payload
    /// is to be cut into segments of this many bytes (PROTOCOL.md B8), sent
    /// only on a flow whose peers agreed to them.
    public var segmentSize: UInt16

    public init(bytes: ByteBuffer, protocolNumber: Int64, segmentSize: UInt16 = 0) {
        self.bytes = bytes
        self.protocolNumber = protocolNumber
        self.segmentSize = segmentSize
    }

    /// A packet to send, with the protocol number derived from its version nibble.
    public init(bytes: ByteBuffer, segmentSize: UInt16 = 0) {
        self.bytes = bytes
        self.protocolNumber = Self.ipVersion(of: bytes) == .v6 ? ProtocolNumber.ipv6 : ProtocolNumber.ipv4
        self.segmentSize = segmentSize
    }

    public var isSuperPacket: Bool { segmentSize != 0 }

    /// The IP version from the packet's first nibble, which decides over
    /// `protocolNumber` (PROTOCOL.md A2); nil when it is neither 4 nor 6.
    public var ipVersion: IPVersion? { Self.ipVersion(of: bytes) }

    static func ipVersion(of bytes: ByteBuffer) -> IPVersion? {
        switch bytes.getInteger(at: bytes.readerIndex, as: UInt8.self).map({ $0 >> 4 }) {
        case 4: return .v4
        case 6: return .v6
        default: return nil
        }
    }
}
