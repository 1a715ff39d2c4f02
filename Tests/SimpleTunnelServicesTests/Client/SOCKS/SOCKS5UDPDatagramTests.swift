import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("SOCKS5 UDP datagrams")
struct SOCKS5UDPDatagramTests {
    @Test func parsesAnIPv4Datagram() throws {
        let datagram = try SOCKS5UDPDatagram(parsing: ByteBuffer(hex: "0000 00 01 c0000201 0035 cafe"))
        #expect(datagram.endpoint == TunnelEndpoint(host: "192.0.2.1", port: 53))
        #expect(datagram.payload == ByteBuffer(hex: "cafe"))
    }

    @Test func parsesAnIPv6Datagram() throws {
        let datagram = try SOCKS5UDPDatagram(parsing: ByteBuffer(hex: "0000 00 04 fe800000000000000000000000000001 1f90 01"))
        #expect(datagram.endpoint == TunnelEndpoint(host: "fe80::1", port: 8080))
        #expect(datagram.payload == ByteBuffer(hex: "01"))
    }

    @Test func parsesADomainDatagramWithAnEmptyPayload() throws {
        let header = SOCKS5ClientBytes.glued(ByteBuffer(hex: "0000 00 03 0b"), ByteBuffer(string: "example.com"), ByteBuffer(hex: "01bb"))
        let datagram = try SOCKS5UDPDatagram(parsing: header)
        #expect(datagram.endpoint == TunnelEndpoint(host: "example.com", port: 443))
        #expect(datagram.payload.readableBytes == 0)
    }

    @Test(arguments: [
        TunnelEndpoint(host: "192.0.2.1", port: 53),
        TunnelEndpoint(host: "2001:db8::1", port: 5353),
        TunnelEndpoint(host: "::", port: 1),
        TunnelEndpoint(host: "example.com", port: 443),
        TunnelEndpoint(host: String([String](repeating: String(repeating: "n", count: 63), count: 4).joined(separator: ".").dropLast(2)), port: 65535),
    ])
    func roundTrips(endpoint: TunnelEndpoint) throws {
        let original = SOCKS5UDPDatagram(endpoint: endpoint, payload: ByteBuffer(counter: 300))
        let parsed = try SOCKS5UDPDatagram(parsing: try original.encoded())
        #expect(parsed == original)
    }

    @Test(arguments: [
        ("192.0.2.1", "0000 00 01 c0000201 0035 ff"),
        ("2001:DB8::1", "0000 00 04 20010db8000000000000000000000001 0035 ff"),
        ("::ffff:192.0.2.1", "0000 00 01 c0000201 0035 ff"),
        ("dns.test", "0000 00 03 08 646e732e74657374 0035 ff"),
    ])
    func buildsRepliesWithTheRightAddressType(host: String, expected: String) throws {
        let datagram = SOCKS5UDPDatagram(endpoint: TunnelEndpoint(host: host, port: 53), payload: ByteBuffer(hex: "ff"))
        #expect(try datagram.encoded() == ByteBuffer(hex: expected))
    }

    @Test(arguments: [UInt8(1), 0x7F, 0x80, 0xFF])
    func dropsFragments(fragment: UInt8) {
        let bytes = SOCKS5ClientBytes.glued(ByteBuffer(bytes: [0, 0, fragment]), ByteBuffer(hex: "01 c0000201 0035 00"))
        #expect(throws: SOCKS5Error.fragmentedDatagram(fragment: fragment)) {
            try SOCKS5UDPDatagram(parsing: bytes)
        }
    }

    @Test(arguments: ["", "0000", "000000", "0000 00 01 c00002", "0000 00 01 c0000201 00", "0000 00 03 05 6162"])
    func dropsDatagramsThatEndInsideTheHeader(hex: String) {
        let bytes = ByteBuffer(hex: hex)
        #expect(throws: SOCKS5Error.truncatedDatagram(length: bytes.readableBytes)) {
            try SOCKS5UDPDatagram(parsing: bytes)
        }
    }

    @Test func dropsDatagramsWithBadHeaders() {
        #expect(throws: SOCKS5Error.nonZeroReservedByte(0x12)) {
            try SOCKS5UDPDatagram(parsing: ByteBuffer(hex: "0012 00 01 c0000201 0035"))
        }
        #expect(throws: SOCKS5Error.unsupportedAddressType(0x05)) {
            try SOCKS5UDPDatagram(parsing: ByteBuffer(hex: "0000 00 05 c0000201 0035"))
        }
        #expect(throws: SOCKS5Error.emptyDomainName) {
            try SOCKS5UDPDatagram(parsing: ByteBuffer(hex: "0000 00 03 00 0035"))
        }
    }

    @Test func refusesToBuildWhatSOCKSCannotCarry() {
        let tooLong = String(repeating: "n", count: 256)
        #expect(throws: SOCKS5Error.hostNotEncodable(tooLong)) {
            try SOCKS5UDPDatagram(endpoint: TunnelEndpoint(host: tooLong, port: 53), payload: ByteBuffer()).encoded()
        }
        #expect(throws: SOCKS5Error.hostNotEncodable("")) {
            try SOCKS5UDPDatagram(endpoint: TunnelEndpoint(host: "", port: 53), payload: ByteBuffer()).encoded()
        }
        #expect(throws: SOCKS5Error.portOutOfRange(-1)) {
            try SOCKS5UDPDatagram(endpoint: TunnelEndpoint(host: "192.0.2.1", port: -1), payload: ByteBuffer()).encoded()
        }
    }
}
