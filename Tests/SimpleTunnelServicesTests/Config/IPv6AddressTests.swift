import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("IPv6 addresses and networks")
struct IPv6AddressTests {
    @Test(arguments: [
        ("::", "::"),
        ("::1", "::1"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("fd00::", "fd00::"),
        ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
        ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4"),
        ("1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"),
        ("1::2:3:4:5:6:7", "1:0:2:3:4:5:6:7"),
        ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
        ("::FFFF:0102:0304", "::ffff:1.2.3.4"),
        ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
    ])
    func parsesAndFormatsTheRFC5952Form(text: String, canonical: String) throws {
        let address = try #require(IPv6Address(text))
        #expect(address.description == canonical)
        #expect(IPv6Address(canonical) == address)
    }

    @Test func storesTheAddressAsABigEndianNumber() {
        #expect(IPv6Address("::1")?.rawValue == 1)
        #expect(IPv6Address("8000::")?.rawValue == UInt128(1) << 127)
        #expect(IPv6Address("1:2:3:4:5:6:7:8")?.groups == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test(arguments: [
        "", ":", ":::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1::", "1::2:", "12345::",
        "g::", "::1 ", " ::1", "fe80::1%eth0", "[::1]", "::1.2.3", "1.2.3.4::", "::ffff:1.2.3.4:5",
        "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5:6:7::8", "1.2.3.4",
    ])
    func refusesMalformedText(text: String) {
        #expect(IPv6Address(text) == nil)
    }

    @Test func findsTheIPv4AddressInsideAMappedAddress() {
        #expect(IPv6Address("::ffff:10.1.2.3")?.ipv4Mapped == IPv4Address(10, 1, 2, 3))
        #expect(IPv6Address("::10.1.2.3")?.ipv4Mapped == nil)
        #expect(IPv6Address(ipv4Mapped: IPv4Address(10, 1, 2, 3)).description == "::ffff:10.1.2.3")
    }

    @Test func parsesNetworks() throws {
        let network = try IPv6Network(parsing: "fd00::/8")
        #expect(network.contains(IPv6Address("fdab::1")!))
        #expect(!network.contains(IPv6Address("fe80::1")!))
        #expect(try IPv6Network(parsing: "::/0").contains(IPv6Address("2001:db8::1")!))
        #expect(try IPv6Network(parsing: "::1").prefixLength == 128)
        #expect(try IPv6Network(parsing: "::ffff:10.0.0.0/104").ipv4Mapped?.description == "10.0.0.0/8")
        #expect(try IPv6Network(parsing: "fd00::/8").ipv4Mapped == nil)
    }

    @Test func refusesBadNetworksWithAReason() {
        #expect(throws: NetworkParseError.invalidPrefixLength("129", maximum: 128)) { try IPv6Network(parsing: "fd00::/129") }
        #expect(throws: NetworkParseError.hostBitsSet(suggestion: "fd00::/8")) { try IPv6Network(parsing: "fd12::/8") }
        #expect(throws: NetworkParseError.invalidAddress("fd00:::", family: "IPv6")) { try IPv6Network(parsing: "fd00:::/8") }
    }

    @Test func readsEitherFamily() {
        #expect(IPAddress("10.0.0.1") == .v4(IPv4Address(10, 0, 0, 1)))
        #expect(IPAddress("::1") == .v6(IPv6Address(rawValue: 1)))
        #expect(IPAddress("db.internal") == nil)
        #expect(IPAddress("::ffff:10.0.0.1")?.unmapped == .v4(IPv4Address(10, 0, 0, 1)))
        #expect(IPAddress("::1")?.unmapped == IPAddress("::1"))
    }

    @Test func readsSocketAddresses() throws {
        let v4 = try SocketAddress(ipAddress: "192.168.1.5", port: 443)
        #expect(IPAddress(v4) == IPAddress("192.168.1.5"))
        let v6 = try SocketAddress(ipAddress: "2001:db8::42", port: 443)
        #expect(IPAddress(v6) == IPAddress("2001:db8::42"))
        let mapped = try SocketAddress(ipAddress: "::ffff:10.9.8.7", port: 1)
        #expect(IPAddress(mapped)?.unmapped == IPAddress("10.9.8.7"))
    }
}
