import NIOCore

/// The two fields of an IPv4 header the IP layer routes by.
enum IPv4PacketHeader {
    /// Source and destination of an IPv4 packet; nil for anything else
    /// (IPv6, or too short to be a packet).
    static func addresses(of packet: ByteBuffer) -> (source: IPv4Address, destination: IPv4Address)? {
        let start = packet.readerIndex
        guard packet.readableBytes >= 20,
            let versionAndLength = packet.getInteger(at: start, as: UInt8.self), versionAndLength >> 4 == 4,
            let source = packet.getInteger(at: start + 12, endianness: .big, as: UInt32.self),
            let destination = packet.getInteger(at: start + 16, endianness: .big, as: UInt32.self)
        else { return nil }
        return (IPv4Address(rawValue: source), IPv4Address(rawValue: destination))
    }
}
