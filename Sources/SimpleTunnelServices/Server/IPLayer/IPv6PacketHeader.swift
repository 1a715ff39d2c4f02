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

    /// The destination port, found past the extension headers (hop-by-hop,
    /// routing, destination options, a first fragment's header), or why
    /// there is none to read. A port the walk cannot reach (too many headers,
    /// AH, ESP, an extension header it does not know, the packet's end) is
    /// undeterminable, not absent.
    static func destinationPort(of packet: ByteBuffer) -> PortLookup {
        let start = packet.readerIndex
        guard var next = packet.getInteger(at: start + 6, as: UInt8.self) else { return .undeterminable(.truncated) }
        var offset = start + fixedLength
        var headers = 0
        // Inside a first fragment more follow: what is cut off here is in the next one.
        var firstFragment = false
        var cut: PortLookup { .undeterminable(firstFragment ? .fragmentWithoutTransportHeader : .truncated) }
        while true {
            switch next {
            case 0, 43, 44, 60:
                guard headers < maximumExtensionHeaders else { return .undeterminable(.tooManyExtensionHeaders) }
                headers += 1
                guard let following = packet.getInteger(at: offset, as: UInt8.self) else { return cut }
                if next == 44 {
                    guard let fragment = packet.getInteger(at: offset + 2, endianness: .big, as: UInt16.self) else { return cut }
                    guard fragment >> 3 == 0 else { return .noPort }
                    firstFragment = fragment & 1 == 1
                    offset += 8
                } else {
                    guard let length = packet.getInteger(at: offset + 1, as: UInt8.self) else { return cut }
                    offset += (Int(length) + 1) * 8
                }
                next = following
            case 50:
                return .undeterminable(.encrypted)
            case 51:
                return .undeterminable(.authenticationHeader)
            case 135, 139, 140, 253, 254:
                return .undeterminable(.unknownExtensionHeader)
            case let number where PortLookup.carriesPorts(number):
                guard let port = packet.getInteger(at: offset + 2, endianness: .big, as: UInt16.self) else { return cut }
                return .port(port)
            default:
                return .noPort
            }
        }
    }

    /// Link-local (fe80::/10) or multicast (ff00::/8): traffic of the tunnel's
    /// own link (router solicitations, neighbour discovery), which has no
    /// business beyond it.
    static func isLinkScoped(_ address: IPv6Address) -> Bool {
        address.rawValue >> 118 == 0x3FA || address.rawValue >> 120 == 0xFF
    }
}
