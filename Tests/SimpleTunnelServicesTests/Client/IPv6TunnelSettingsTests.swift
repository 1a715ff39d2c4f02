import Testing
@testable import SimpleTunnelServices

@Suite("Client: the IPv6 settings a server pushes with a lease")
struct IPv6TunnelSettingsTests {
    static let ipv4: PropertyListValue = .dictionary(["Address": .string("10.90.0.2"), "Netmask": .string("255.255.255.255")])

    static func route(_ address: String, _ prefixLength: Int128) -> PropertyListValue {
        .dictionary(["Address": .string(address), "PrefixLength": .integer(prefixLength)])
    }

    @Test func aDualStackLeaseCarriesBothAddressesRoutesAndDNS() throws {
        let settings = try IPTunnelSettings(configuration: [
            "IPv4": Self.ipv4,
            "IPv6": .dictionary([
                "Address": .string("fd00:90::2"), "PrefixLength": .integer(128), "Routes": .array([Self.route("fd00:2::", 64)]),
            ]),
            "DNS": .dictionary(["Servers": .strings(["fd00:2::53", "10.0.0.53"])]),
        ])
        #expect(settings.address?.description == "10.90.0.2")
        #expect(settings.ipv6?.address.description == "fd00:90::2" && settings.ipv6?.prefixLength == 128)
        #expect(settings.ipv6?.routes?.map(\.description) == ["fd00:2::/64"])
        #expect(settings.dnsServers.map(\.description) == ["fd00:2::53", "10.0.0.53"])
        #expect(settings.leaseDescription == "10.90.0.2/32, fd00:90::2/128")
    }

    @Test func withoutIPv6RoutesAllIPv6GoesThroughTheTunnelAndWithoutIPv6NothingChanges() throws {
        let full = try IPTunnelSettings(configuration: ["IPv4": Self.ipv4, "IPv6": .dictionary(["Address": .string("fd00:90::2")])])
        #expect(full.ipv6?.routes == nil && full.ipv6?.prefixLength == 128)
        let ipv4Only = try IPTunnelSettings(configuration: ["IPv4": Self.ipv4])
        #expect(ipv4Only.ipv6 == nil && ipv4Only.leaseDescription == "10.90.0.2/32")
    }

    @Test func anIPv6OnlyLeaseHasNoIPv4AddressAndTakesTheMTUFromIPv6() throws {
        let settings = try IPTunnelSettings(configuration: ["IPv6": .dictionary(["Address": .string("fd00:90::2"), "MTU": .integer(1300)])])
        #expect(settings.address == nil)
        #expect(settings.mtu == 1300)
        #expect(settings.leaseDescription == "fd00:90::2/128")
        // An IPv6 MTU below IPv6's minimum is not taken.
        let small = try IPTunnelSettings(configuration: ["IPv6": .dictionary(["Address": .string("fd00:90::2"), "MTU": .integer(1000)])])
        #expect(small.mtu == nil)
    }

    @Test(arguments: [
        (PropertyListValue.dictionary([:]), "no IPv6 Address"),
        (.dictionary(["Address": .string("10.0.0.1")]), "no IPv6 Address"),
        (.string("fd00::1"), "no IPv6 Address"),
        (.dictionary(["Address": .string("fd00::2"), "PrefixLength": .integer(129)]), "is not from 0 to 128"),
        (.dictionary(["Address": .string("fd00::2"), "Routes": .array([.string("fd00::/8")])]), "not {Address, PrefixLength}"),
        (.dictionary(["Address": .string("fd00::2"), "Routes": .array([route("fd00::1", 8)])]), "not {Address, PrefixLength}"),
    ])
    func aMalformedIPv6DictionaryFromTheServerIsRefusedSayingWhy(ipv6: PropertyListValue, problem: String) {
        #expect {
            _ = try IPTunnelSettings(configuration: ["IPv4": Self.ipv4, "IPv6": ipv6])
        } throws: { error in
            "\(error)".contains(problem)
        }
    }

    @Test func aConfigurationWithNeitherFamilyIsRefused() {
        #expect {
            _ = try IPTunnelSettings(configuration: [:])
        } throws: { error in
            "\(error)".contains("no IPv4.Address")
        }
    }
}
