import NIOCore

/// ATYP, DST.ADDR/BND.ADDR and the port, as they go on the wire: shared by
/// requests, replies and UDP datagram headers.
struct SOCKS5Address: Hashable, Sendable {
    let type: UInt8
    /// 4 or 16 address bytes, or the name without its length byte.
    let addressBytes: [UInt8]
    let port: UInt16

    static let unspecifiedIPv4 = SOCKS5Address(type: SOCKS5Wire.AddressType.ipv4, addressBytes: [0, 0, 0, 0], port: 0)

    private init(type: UInt8, addressBytes: [UInt8], port: UInt16) {
        self.type = type
        self.addressBytes = addressBytes
        self.port = port
    }

    /// The wire form of an endpoint: IP literals as IPv4 or IPv6 (an
    /// IPv4-mapped address as IPv4, matching how the client wrote it), any
    /// other host as a domain name.
    init(_ endpoint: TunnelEndpoint) throws(SOCKS5Error) {
        guard let port = UInt16(exactly: endpoint.port) else { throw .portOutOfRange(endpoint.port) }
        switch IPAddress(endpoint.host)?.unmapped {
        case .v4(let ipv4):
            self.init(type: SOCKS5Wire.AddressType.ipv4, addressBytes: ipv4.bytes, port: port)
        case .v6(let ipv6):
            self.init(type: SOCKS5Wire.AddressType.ipv6, addressBytes: ipv6.bytes, port: port)
        case nil:
            let name = Array(endpoint.host.utf8)
            guard (1...255).contains(name.count) else { throw .hostNotEncodable(endpoint.host) }
            self.init(type: SOCKS5Wire.AddressType.domainName, addressBytes: name, port: port)
        }
    }

    /// A NIO socket address as an IP literal; Unix sockets (which a SOCKS
    /// reply cannot express) as 0.0.0.0:0.
    init(_ address: SocketAddress?) {
        guard let address, let host = address.ipAddress, let port = address.port,
            let wire = try? SOCKS5Address(TunnelEndpoint(host: host, port: port))
        else {
            self = .unspecifiedIPv4
            return
        }
        self = wire
    }

    var endpoint: TunnelEndpoint {
        let host: String
        switch type {
        case SOCKS5Wire.AddressType.ipv4: host = IPv4Address(bytes: addressBytes).description
        case SOCKS5Wire.AddressType.ipv6: host = IPAddress.v6(IPv6Address(bytes: addressBytes)).unmapped.description
        default:
            // A name that is really an IPv6 literal gets the same plain form as
            // an address would, so the tunnel never sees two spellings.
            let name = String(decoding: addressBytes, as: UTF8.self)
            host = IPv6Address(name).map { IPAddress.v6($0).unmapped.description } ?? name
        }
        return TunnelEndpoint(host: host, port: Int(port))
    }

    func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(type)
        if type == SOCKS5Wire.AddressType.domainName {
            buffer.writeInteger(UInt8(addressBytes.count))
        }
        buffer.writeBytes(addressBytes)
        buffer.writeInteger(port)
    }

    /// Reads ATYP, address and port. Returns nil, consuming nothing, while
    /// the address is incomplete; a bad address type or name throws as soon
    /// as its bytes arrive.
    static func read(from buffer: inout ByteBuffer) throws(SOCKS5Error) -> SOCKS5Address? {
        var view = buffer
        guard let type = view.readInteger(as: UInt8.self) else { return nil }
        let length: Int
        switch type {
        case SOCKS5Wire.AddressType.ipv4:
            length = 4
        case SOCKS5Wire.AddressType.ipv6:
            length = 16
        case SOCKS5Wire.AddressType.domainName:
            guard let nameLength = view.readInteger(as: UInt8.self) else { return nil }
            guard nameLength > 0 else { throw .emptyDomainName }
            length = Int(nameLength)
        default:
            throw .unsupportedAddressType(type)
        }
        guard let addressBytes = view.readBytes(length: length) else { return nil }
        if type == SOCKS5Wire.AddressType.domainName, !isAcceptableDomainName(addressBytes) {
            throw .malformedDomainName
        }
        guard let port = view.readInteger(as: UInt16.self) else { return nil }
        buffer = view
        return SOCKS5Address(type: type, addressBytes: addressBytes, port: port)
    }

    /// A DNS name or an IP literal (`TunnelHostSyntax`): what the tunnel
    /// server accepts as a `host`, and one that logs safely.
    private static func isAcceptableDomainName(_ bytes: [UInt8]) -> Bool {
        guard let name = String(validating: bytes, as: UTF8.self) else { return false }
        return TunnelHostSyntax.isValid(name)
    }
}
