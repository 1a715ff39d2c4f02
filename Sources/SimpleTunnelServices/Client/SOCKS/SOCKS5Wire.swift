/// Fixed bytes of RFC 1928.
enum SOCKS5Wire {
    static let version: UInt8 = 0x05

    enum Method {
        static let noAuthentication: UInt8 = 0x00
        static let noAcceptableMethods: UInt8 = 0xFF
    }

    enum Command {
        static let connect: UInt8 = 0x01
        static let bind: UInt8 = 0x02
        static let udpAssociate: UInt8 = 0x03
    }

    enum AddressType {
        static let ipv4: UInt8 = 0x01
        static let domainName: UInt8 = 0x03
        static let ipv6: UInt8 = 0x04
    }

    /// VER CMD RSV ATYP, a 255-byte name with its length byte, and the port.
    static let maximumRequestLength = 4 + 1 + 255 + 2
}
