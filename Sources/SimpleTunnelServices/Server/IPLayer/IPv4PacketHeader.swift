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

    /// The destination port (the first fragment carries it), or why there
    /// is none to read. Only for a packet `addresses(of:)` took as IPv4.
    static func destinationPort(of packet: ByteBuffer) -> PortLookup {
        let start = packet.readerIndex
        guard let versionAndLength = packet.getInteger(at: start, as: UInt8.self),
            let fragment = packet.getInteger(at: start + 6, endianness: .big, as: UInt16.self),
            let protocolNumber = packet.getInteger(at: start + 9, as: UInt8.self)
        else { return .undeterminable(.truncated) }
        guard fragment & 0x1FFF == 0 else { return .noPort }
        switch protocolNumber {
        case 50: return .undeterminable(.encrypted)
        case 51: return .undeterminable(.authenticationHeader)
        case let number where !PortLookup.carriesPorts(number): return .noPort
        default: break
        }
        let headerLength = Int(versionAndLength & 0x0F) * 4
        guard headerLength >= 20 else { return .undeterminable(.malformedHeader) }
        guard let port = packet.getInteger(at: start + headerLength + 2, endianness: .big, as: UInt16.self) else {
            let moreFragments = fragment & 0x2000 != 0
            return .undeterminable(moreFragments ? .fragmentWithoutTransportHeader : .truncated)
        }
        return .port(port)
    }

    /// Multicast (224.0.0.0/4), the limited broadcast (255.255.255.255) and
    /// link-local (169.254.0.0/16): the client's own link, or the server's if
    /// forwarded there (mDNS, DHCP, SSDP reaching the server's own services),
    /// never a destination beyond it.
    static func isLinkScoped(_ address: IPv4Address) -> Bool {
        address.rawValue >> 28 == 0xE || address.rawValue == .max || isLinkLocal(address)
    }

    /// 169.254.0.0/16, where clouds put their resolvers and metadata services.
    static func isLinkLocal(_ address: IPv4Address) -> Bool {
        address.rawValue >> 16 == 0xA9FE
    }
}
