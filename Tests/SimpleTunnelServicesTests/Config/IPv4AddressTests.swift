import Testing
@testable import SimpleTunnelServices

@Suite("IPv4 addresses and networks")
struct IPv4AddressTests {
    @Test(arguments: ["0.0.0.0", "10.0.0.1", "192.168.2.10", "255.255.255.255", "1.20.3.199"])
    func parsesAndFormatsDottedQuads(text: String) throws {
        let address = try #require(IPv4Address(text))
        #expect(address.description == text)
    }

    @Test func storesTheAddressInHostOrder() {
        #expect(IPv4Address("10.0.0.1")?.rawValue == 0x0A00_0001)
        #expect(IPv4Address(192, 168, 2, 10) == IPv4Address("192.168.2.10"))
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.-1", " 1.2.3.4", "1.2.3.4 ", "1. 2.3.4", "1..3.4",
        "1.2.3.", ".1.2.3", "0x7f.0.0.1", "127.1", "01.2.3.4", "1.2.3.004", "1.2.3.1000", "a.b.c.d", "１.2.3.4",
        "1.2.3.4.", "1.2.3.00", "255.255.255.256",
    ])
    func refusesAnythingButAStrictDottedQuad(text: String) {
        #expect(IPv4Address(text) == nil)
    }

    @Test func ordersAndOffsetsLikeIntegers() {
        let start = IPv4Address(192, 168, 2, 2)
        let end = IPv4Address(192, 168, 2, 10)
        #expect(start < end)
        #expect(start + 8 == end)
        #expect(end - 8 == start)
        #expect(start.distance(to: end) == 8)
        #expect((start...end).count == 9)
        #expect(Array(start...end).last == end)
        #expect(IPv4Address(10, 0, 0, 255) + 1 == IPv4Address(10, 0, 1, 0))
    }

    @Test func checkedOffsetsStayInsideTheAddressSpace() {
        #expect(IPv4Address(rawValue: .max).advanced(byChecked: 1) == nil)
        #expect(IPv4Address(rawValue: 0).advanced(byChecked: -1) == nil)
        #expect(IPv4Address(rawValue: 0).advanced(byChecked: Int64.max) == nil)
        #expect(IPv4Address(rawValue: 5).advanced(byChecked: -5) == IPv4Address(rawValue: 0))
    }

    @Test func parsesCIDRNetworks() throws {
        let network = try IPv4Network(parsing: "10.0.0.0/8")
        #expect(network.prefixLength == 8)
        #expect(network.netmask.description == "255.0.0.0")
        #expect(network.contains(IPv4Address(10, 255, 1, 2)))
        #expect(!network.contains(IPv4Address(11, 0, 0, 0)))
        #expect(try IPv4Network(parsing: "0.0.0.0/0").contains(IPv4Address(8, 8, 8, 8)))
        let host = try IPv4Network(parsing: "192.168.1.5")
        #expect(host.prefixLength == 32)
        #expect(host.contains(IPv4Address(192, 168, 1, 5)))
        #expect(!host.contains(IPv4Address(192, 168, 1, 6)))
    }

    @Test func refusesBadCIDRNetworksWithAReason() {
        #expect(throws: NetworkParseError.invalidPrefixLength("33", maximum: 32)) { try IPv4Network(parsing: "10.0.0.0/33") }
        #expect(throws: NetworkParseError.invalidPrefixLength("", maximum: 32)) { try IPv4Network(parsing: "10.0.0.0/") }
        #expect(throws: NetworkParseError.invalidPrefixLength("+8", maximum: 32)) { try IPv4Network(parsing: "10.0.0.0/+8") }
        #expect(throws: NetworkParseError.invalidAddress("10.0.0", family: "IPv4")) { try IPv4Network(parsing: "10.0.0/8") }
        #expect(throws: NetworkParseError.hostBitsSet(suggestion: "10.0.0.0/8")) { try IPv4Network(parsing: "10.1.0.0/8") }
    }

    @Test func buildsNetworksFromAnAddressAndANetmask() throws {
        let network = try IPv4Network(address: "172.16.0.0", netmask: "255.240.0.0")
        #expect(network.description == "172.16.0.0/12")
        #expect(try IPv4Network(address: "0.0.0.0", netmask: "0.0.0.0").prefixLength == 0)
        #expect(try IPv4Network(address: "1.2.3.4", netmask: "255.255.255.255").prefixLength == 32)
    }

    @Test func refusesNonContiguousNetmasks() {
        #expect(throws: NetworkParseError.nonContiguousNetmask("255.0.255.0")) {
            try IPv4Network(address: "10.0.0.0", netmask: "255.0.255.0")
        }
        #expect(throws: NetworkParseError.nonContiguousNetmask("0.255.255.255")) {
            try IPv4Network(address: "0.0.0.0", netmask: "0.255.255.255")
        }
        #expect(throws: NetworkParseError.hostBitsSet(suggestion: "10.0.0.0/8")) {
            try IPv4Network(address: "10.0.0.1", netmask: "255.0.0.0")
        }
    }

    @Test func memberwiseNetworksRefuseHostBits() {
        #expect(IPv4Network(address: IPv4Address(10, 0, 0, 1), prefixLength: 8) == nil)
        #expect(IPv4Network(address: IPv4Address(10, 0, 0, 0), prefixLength: 33) == nil)
        #expect(IPv4Network(address: IPv4Address(10, 0, 0, 0), prefixLength: 8)?.description == "10.0.0.0/8")
    }
}
