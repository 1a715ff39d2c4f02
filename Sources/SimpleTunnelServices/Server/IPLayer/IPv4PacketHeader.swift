import NIOCore

/// The fields of an IPv4 header the IP layer routes and filters by.
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

    /// The destination port of a TCP or UDP packet (the first fragment
    /// carries it); nil for other protocols, later fragments, or a packet
    /// too short to hold the port.
    static func destinationPort(of packet: ByteBuffer) -> Int? {
        let start = packet.readerIndex
        guard let versionAndLength = packet.getInteger(at: start, as: UInt8.self),
            let fragment = packet.getInteger(at: start + 6, endianness: .big, as: UInt16.self), fragment & 0x1FFF == 0,
            let protocolNumber = packet.getInteger(at: start + 9, as: UInt8.self),
            protocolNumber == 6 || protocolNumber == 17
        else { return nil }
        let headerLength = Int(versionAndLength & 0x0F) * 4
        guard headerLength >= 20, let port = packet.getInteger(at: start + headerLength + 2, endianness: .big, as: UInt16.self) else {
            return nil
        }
        return Int(port)
    }
}
