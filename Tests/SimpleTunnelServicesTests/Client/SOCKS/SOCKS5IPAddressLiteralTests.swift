import Foundation
import Testing
@testable import SimpleTunnelServices

/// The text forms SOCKS5 addresses take, through the Config layer's address types.
private enum IPAddressLiteral {
    static func ipv6Bytes(_ text: String) -> [UInt8]? { IPv6Address(text)?.bytes }
    static func ipv6Text(_ bytes: [UInt8]) -> String { IPAddress.v6(IPv6Address(bytes: bytes)).unmapped.description }
    static func ipv4Bytes(_ text: String) -> [UInt8]? { IPv4Address(text)?.bytes }
    static func ipv4Text(_ bytes: [UInt8]) -> String { IPv4Address(bytes: bytes).description }
}

@Suite("SOCKS5 IP literals", .timeLimit(.minutes(2)))
struct SOCKS5IPAddressLiteralTests {
    /// RFC 5952 §4 and its examples.
    @Test(arguments: [
        ("2001:0db8::0001", "2001:db8::1"),
        ("2001:db8:0:0:0:0:2:1", "2001:db8::2:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:DB8::AbCd", "2001:db8::abcd"),
        ("0:0:0:0:0:0:0:0", "::"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("1:0:0:0:0:0:0:0", "1::"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("::FFFF:c000:0201", "192.0.2.1"),
        ("::192.0.2.1", "::c000:201"),
        ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
    ])
    func writesIPv6InRFC5952Form(input: String, expected: String) throws {
        let bytes = try #require(IPAddressLiteral.ipv6Bytes(input))
        #expect(IPAddressLiteral.ipv6Text(bytes) == expected)
    }

    @Test(arguments: [
        "", ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "12345::", "g::", "+1::", "::1.2.3",
        "1.2.3.4::", "::1:", ":1::", "[::1]", "fe80::1%eth0", "::256.0.0.1", "1:2:3:4:5:6:7:8::",
    ])
    func refusesMalformedIPv6(input: String) {
        #expect(IPAddressLiteral.ipv6Bytes(input) == nil)
    }

    @Test(arguments: ["0.0.0.0", "192.0.2.1", "255.255.255.255", "10.0.0.10"])
    func readsIPv4(input: String) throws {
        let bytes = try #require(IPAddressLiteral.ipv4Bytes(input))
        #expect(IPAddressLiteral.ipv4Text(bytes) == input)
    }

    @Test(arguments: ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.1.1.1", "1..2.3", "1.2.3.-4", "1.2.3.4 ", "1234.1.1.1", "a.b.c.d"])
    func refusesMalformedIPv4(input: String) {
        #expect(IPAddressLiteral.ipv4Bytes(input) == nil)
    }

    /// Python's `ipaddress` follows RFC 5952 as well: random addresses with
    /// many zero groups must come out the same from both.
    @Test func agreesWithPythonOnRandomAddresses() async throws {
        var generator = SystemRandomNumberGenerator()
        var addresses: [[UInt8]] = []
        for _ in 0..<300 {
            let groups = (0..<8).map { _ -> UInt16 in Bool.random(using: &generator) ? 0 : UInt16.random(in: 0...0xFFFF, using: &generator) }
            let bytes = groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            if !mapped { addresses.append(bytes) }
        }
        let input = addresses.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "\n")
        let script = "import ipaddress,sys\nfor line in sys.stdin.read().split():\n    print(ipaddress.IPv6Address(bytes.fromhex(line)).compressed)"
        let output = try await ExternalPropertyListReaders.runPython(script, input: Data(input.utf8))
        let expected = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(expected.count == addresses.count)
        for (bytes, pythonText) in zip(addresses, expected) {
            #expect(IPAddressLiteral.ipv6Text(bytes) == pythonText)
            #expect(IPAddressLiteral.ipv6Bytes(pythonText) == bytes)
        }
    }
}
