import NIOCore

/// The fields of an IPv6 header the IP layer routes and filters by.
enum IPv6PacketHeader {
    static let fixedLength = 40

    /// Source and destination of an IPv6 packet; nil for anything else.
    static func addresses(of packet: ByteBuffer) -> (source: IPv6Address, destination: IPv6Address)? {
        let start = packet.readerIndex
        guard packet.readableBytes >= fixedLength,
            let version = packet.getInteger(at: start, as: UInt8.self), version >> 4 == 6,
            let source = address(in: packet, at: start + 8),
            let destination = address(in: packet, at: start + 24)
        else { return nil }
        return (source, destination)
    }

    private static func address(in packet: ByteBuffer, at index: Int) -> IPv6Address? {
        guard let high = packet.getInteger(at: index, endianness: .big, as: UInt64.self),
            let low = packet.getInteger(at: index + 8, endianness: .big, as: UInt64.self)
        else { return nil }
        return IPv6Address(rawValue: UInt128(high) << 64 | UInt128(low))
    }

    /// Extension headers walked before giving up on finding the port; real packets carry one or two.
    static let maximumExtensionHeaders = 8

    /// The destination port of a TCP or UDP packet, found past the common
    /// extension headers (hop-by-hop, routing, destination options, and a first
    /// fragment's header); nil for other protocols, later fragments, or a packet
    /// too short to hold the port.
    static func destinationPort(of packet: ByteBuffer) -> Int? {
        let start = packet.readerIndex
        guard var next = packet.getInteger(at: start + 6, as: UInt8.self) else { return nil }
        var offset = start + fixedLength
        for _ in 0...maximumExtensionHeaders {
            switch next {
            case 6, 17:
                return packet.getInteger(at: offset + 2, endianness: .big, as: UInt16.self).map(Int.init)
            case 0, 43, 60:
                guard let following = packet.getInteger(at: offset, as: UInt8.self),
                    let length = packet.getInteger(at: offset + 1, as: UInt8.self)
                else { return nil }
                next = following
                offset += (Int(length) + 1) * 8
            case 44:
                guard let following = packet.getInteger(at: offset, as: UInt8.self),
                    let fragment = packet.getInteger(at: offset + 2, endianness: .big, as: UInt16.self), fragment >> 3 == 0
                else { return nil }
                next = following
                offset += 8
            default:
                return nil
            }
        }
        return nil
    }

    /// Link-local (fe80::/10) or multicast (ff00::/8): traffic of the tunnel's
    /// own link (router solicitations, neighbour discovery), which has no
    /// business beyond it.
    static func isLinkScoped(_ address: IPv6Address) -> Bool {
        address.rawValue >> 118 == 0x3FA || address.rawValue >> 120 == 0xFF
    }
}
