import NIOCore

/// Reads the client's greeting and request from the front of a buffer. Each
/// returns nil, consuming nothing, until its message is complete, and throws
/// as soon as a byte is known to be wrong, so garbage is refused at once
/// rather than buffered.
enum SOCKS5HandshakeParser {
    /// VER NMETHODS METHODS: the methods the client offers.
    static func readGreeting(from buffer: inout ByteBuffer) throws(SOCKS5Error) -> [UInt8]? {
        var view = buffer
        guard let version = view.readInteger(as: UInt8.self) else { return nil }
        guard version == SOCKS5Wire.version else { throw .unsupportedVersion(version) }
        guard let count = view.readInteger(as: UInt8.self) else { return nil }
        guard count > 0 else { throw .noAuthenticationMethodsOffered }
        guard let methods = view.readBytes(length: Int(count)) else { return nil }
        buffer = view
        return methods
    }

    /// VER CMD RSV ATYP DST.ADDR DST.PORT, for CONNECT or UDP ASSOCIATE.
    static func readRequest(from buffer: inout ByteBuffer) throws(SOCKS5Error) -> SOCKS5Request? {
        var view = buffer
        guard let version = view.readInteger(as: UInt8.self) else { return nil }
        guard version == SOCKS5Wire.version else { throw .unsupportedVersion(version) }
        guard let command = view.readInteger(as: UInt8.self) else { return nil }
        guard command == SOCKS5Wire.Command.connect || command == SOCKS5Wire.Command.udpAssociate else {
            throw .unsupportedCommand(command)
        }
        guard let reserved = view.readInteger(as: UInt8.self) else { return nil }
        guard reserved == 0 else { throw .nonZeroReservedByte(reserved) }
        guard let address = try SOCKS5Address.read(from: &view) else { return nil }
        buffer = view
        if command == SOCKS5Wire.Command.connect {
            return .connect(address.endpoint)
        }
        let saysNothing = address.port == 0 && address.type != SOCKS5Wire.AddressType.domainName
            && address.addressBytes.allSatisfy { $0 == 0 }
        return .udpAssociate(clientHint: saysNothing ? nil : address.endpoint)
    }
}
