import NIOCore

/// A datagram on a UDP ASSOCIATE relay (RFC 1928 §7):
/// RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA. From the client, `endpoint` is
/// the destination; to the client, it is the source the reply came from.
public struct SOCKS5UDPDatagram: Sendable, Hashable {
    public var endpoint: TunnelEndpoint
    public var payload: ByteBuffer

    public init(endpoint: TunnelEndpoint, payload: ByteBuffer) {
        self.endpoint = endpoint
        self.payload = payload
    }

    /// Parses a whole datagram from a client. Fragments are refused (we do
    /// not reassemble; RFC 1928 lets a relay drop them), as is anything that
    /// ends inside the header.
    public init(parsing datagram: ByteBuffer) throws(SOCKS5Error) {
        var buffer = datagram
        guard let reserved = buffer.readBytes(length: 2),
            let fragment = buffer.readInteger(as: UInt8.self)
        else { throw .truncatedDatagram(length: datagram.readableBytes) }
        if let nonZero = reserved.first(where: { $0 != 0 }) { throw .nonZeroReservedByte(nonZero) }
        guard fragment == 0 else { throw .fragmentedDatagram(fragment: fragment) }
        guard let address = try SOCKS5Address.read(from: &buffer) else {
            throw .truncatedDatagram(length: datagram.readableBytes)
        }
        self.init(endpoint: address.endpoint, payload: buffer)
    }

    /// The datagram with its header, for sending to the client. Throws if
    /// the endpoint has no SOCKS5 form (a name over 255 bytes, a bad port).
    public func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(SOCKS5Error) -> ByteBuffer {
        let address = try SOCKS5Address(endpoint)
        var buffer = allocator.buffer(capacity: 3 + 2 + address.addressBytes.count + 2 + payload.readableBytes)
        buffer.writeInteger(UInt16(0))
        buffer.writeInteger(UInt8(0))
        address.write(into: &buffer)
        buffer.writeImmutableBuffer(payload)
        return buffer
    }
}
