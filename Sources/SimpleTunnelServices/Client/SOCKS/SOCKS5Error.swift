import NIOCore

/// Why a SOCKS5 connection or datagram was refused, with a stable `kind` for
/// logs and tests and a `description` that tells the user what to change.
public enum SOCKS5Error: Error, Hashable, Sendable, CustomStringConvertible {
    // Faults in what a client sent on its TCP connection.
    case unsupportedVersion(UInt8)
    case noAuthenticationMethodsOffered
    case noAcceptableAuthenticationMethod(offered: [UInt8])
    case unsupportedCommand(UInt8)
    case nonZeroReservedByte(UInt8)
    case unsupportedAddressType(UInt8)
    case emptyDomainName
    case malformedDomainName
    case tooMuchDataBeforeReply(limit: Int)
    case endOfInputDuringHandshake
    case handshakeTimedOut(after: TimeAmount)

    // Faults in a client's UDP datagram; the datagram is dropped.
    case fragmentedDatagram(fragment: UInt8)
    case truncatedDatagram(length: Int)

    // Addresses this side cannot put on the wire.
    case hostNotEncodable(String)
    case portOutOfRange(Int)

    /// e.g. `socks.unsupportedCommand`.
    public var kind: String {
        switch self {
        case .unsupportedVersion: return "socks.unsupportedVersion"
        case .noAuthenticationMethodsOffered: return "socks.noAuthenticationMethodsOffered"
        case .noAcceptableAuthenticationMethod: return "socks.noAcceptableAuthenticationMethod"
        case .unsupportedCommand: return "socks.unsupportedCommand"
        case .nonZeroReservedByte: return "socks.nonZeroReservedByte"
        case .unsupportedAddressType: return "socks.unsupportedAddressType"
        case .emptyDomainName: return "socks.emptyDomainName"
        case .malformedDomainName: return "socks.malformedDomainName"
        case .tooMuchDataBeforeReply: return "socks.tooMuchDataBeforeReply"
        case .endOfInputDuringHandshake: return "socks.endOfInputDuringHandshake"
        case .handshakeTimedOut: return "socks.handshakeTimedOut"
        case .fragmentedDatagram: return "socks.fragmentedDatagram"
        case .truncatedDatagram: return "socks.truncatedDatagram"
        case .hostNotEncodable: return "socks.hostNotEncodable"
        case .portOutOfRange: return "socks.portOutOfRange"
        }
    }

    public var description: String {
        switch self {
        case .unsupportedVersion(let version):
            return Self.describeWrongVersion(version)
        case .noAuthenticationMethodsOffered:
            return "SOCKS client offered no authentication methods; it must offer at least 'no authentication' (0x00)"
        case .noAcceptableAuthenticationMethod(let offered):
            return "SOCKS client asked for authentication methods [\(offered.map(Self.hex).joined(separator: ", "))] "
                + "but this proxy only offers 'no authentication'; configure the client without a username"
        case .unsupportedCommand(0x02):
            return "SOCKS client asked for BIND (0x02), which this proxy does not support; only CONNECT and UDP ASSOCIATE "
                + "are carried through the tunnel (turn off features that need inbound connections, such as active-mode FTP)"
        case .unsupportedCommand(let command):
            return "SOCKS client sent unknown command \(Self.hex(command)); "
                + "only CONNECT (0x01) and UDP ASSOCIATE (0x03) are supported"
        case .nonZeroReservedByte(let value):
            return "SOCKS client put \(Self.hex(value)) in a reserved field that RFC 1928 requires to be zero; "
                + "the client does not speak standard SOCKS5"
        case .unsupportedAddressType(let type):
            return "SOCKS client sent address type \(Self.hex(type)); only IPv4 (0x01), domain name (0x03) and IPv6 (0x04) exist"
        case .emptyDomainName:
            return "SOCKS client sent an empty domain name as the destination"
        case .malformedDomainName:
            return "SOCKS client sent a domain name that is not a DNS name or an IP literal of at most 253 bytes (no spaces, control characters or non-ASCII; IDNA names as xn-- labels)"
        case .tooMuchDataBeforeReply(let limit):
            return "SOCKS client sent more than \(limit) bytes before the proxy answered its request; "
                + "the connection was closed to bound memory (the client should wait for the reply before sending more)"
        case .endOfInputDuringHandshake:
            return "SOCKS client closed the connection before finishing its request"
        case .handshakeTimedOut(let timeout):
            return "SOCKS client did not finish its greeting and request within \(Self.seconds(timeout)); "
                + "check that the client is configured for SOCKS5 and not another proxy protocol"
        case .fragmentedDatagram(let fragment):
            return "SOCKS client sent a UDP datagram fragment (FRAG \(Self.hex(fragment))); "
                + "this proxy does not reassemble fragments, so it was dropped"
        case .truncatedDatagram(let length):
            return "SOCKS client sent a \(length)-byte UDP datagram that ends inside its SOCKS header; it was dropped"
        case .hostNotEncodable(let host):
            return "host '\(host)' cannot be written as a SOCKS5 address: a domain name must be 1 to 255 bytes"
        case .portOutOfRange(let port):
            return "port \(port) cannot be written as a SOCKS5 port: it must be 0 to 65535"
        }
    }

    private static func describeWrongVersion(_ version: UInt8) -> String {
        switch version {
        case 0x04:
            return "SOCKS client spoke SOCKS4, but this proxy only speaks SOCKS5; configure the client for SOCKS version 5"
        case 0x16:
            return "client started a TLS handshake on the SOCKS port; configure it to use this port as a SOCKS5 proxy, "
                + "not as an HTTPS proxy or server"
        case UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return "client sent '\(Character(Unicode.Scalar(version)))' (\(hex(version))), which looks like an HTTP request; "
                + "configure it to use this port as a SOCKS5 proxy, not as an HTTP proxy"
        default:
            return "SOCKS client sent version \(hex(version)) where SOCKS5 (0x05) was expected; configure it for SOCKS version 5"
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return "0x" + (digits.count < 2 ? "0" + digits : digits)
    }

    private static func seconds(_ amount: TimeAmount) -> String {
        let milliseconds = amount.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}
