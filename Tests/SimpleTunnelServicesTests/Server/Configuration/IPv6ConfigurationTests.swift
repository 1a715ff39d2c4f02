import Testing
@testable import SimpleTunnelServices

@Suite("Server configuration: the IPv6 dictionary")
struct IPv6ConfigurationTests {
    static let pool: PropertyListValue = .dictionary(["StartAddress": .string("fd00:90::2"), "EndAddress": .string("fd00:90::ff")])

    static func route(_ address: String, _ prefixLength: Int128) -> PropertyListValue {
        .dictionary(["Address": .string(address), "PrefixLength": .integer(prefixLength)])
    }

    static func configuration(_ ipv6: [String: PropertyListValue]) throws -> TunnelServerConfiguration {
        try TunnelServerConfiguration(propertyList: SampleConfiguration.with(["IPv6": .dictionary(ipv6)]))
    }

    static func error(_ ipv6: [String: PropertyListValue]) -> String {
        do {
            _ = try configuration(ipv6)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func thePoolAndRoutesAreReadAndEachLeaseCarriesItsIPv6Address() throws {
        let configuration = try Self.configuration(["Pool": Self.pool, "Routes": .array([Self.route("fd00:2::", 64), Self.route("2001:db8::", 32)])])
        #expect(configuration.ipv6Pool == IPv6Address("fd00:90::2")!...IPv6Address("fd00:90::ff")!)
        #expect(configuration.ipv6Routes?.map(\.description) == ["fd00:2::/64", "2001:db8::/32"])
        let lease = configuration.configuration(forLease: IPv4Address(192, 168, 2, 2), ipv6: IPv6Address("fd00:90::2"))
        #expect(lease["IPv6"] == .dictionary([
            "Address": .string("fd00:90::2"), "PrefixLength": .integer(128),
            "Routes": .array([Self.route("fd00:2::", 64), Self.route("2001:db8::", 32)]),
        ]))
        // The IPv4 side is what it always was; fetchConfiguration names neither family.
        #expect(lease["IPv4"]?.dictionaryValue?["Address"] == .string("192.168.2.2"))
        #expect(configuration.configurationForFetch()["IPv6"] == nil)
        #expect(configuration.passThroughKeys["IPv6"] == nil)
    }

    @Test func withoutRoutesTheLeaseSaysNoneAndWithoutAnIPv6LeaseThereIsNoIPv6Dictionary() throws {
        let configuration = try Self.configuration(["Pool": Self.pool])
        #expect(configuration.ipv6Routes == nil)
        let lease = configuration.configuration(forLease: IPv4Address(192, 168, 2, 2), ipv6: IPv6Address("fd00:90::3"))
        #expect(lease["IPv6"]?.dictionaryValue?["Routes"] == nil)
        #expect(configuration.configuration(forLease: IPv4Address(192, 168, 2, 2))["IPv6"] == nil)
    }

    @Test func IPv6DNSServersAreKept() throws {
        let configuration = try TunnelServerConfiguration(
            propertyList: SampleConfiguration.with(["DNS": .dictionary(["Servers": .strings(["fd00:2::53", "10.0.0.53"])])]))
        #expect(configuration.dns?.servers == [IPAddress("fd00:2::53")!, IPAddress("10.0.0.53")!])
    }

    @Test func mistypedKeysAreNamedWithTheKeyTheyMeant() {
        #expect(Self.error(["Pool": Self.pool, "Route": .array([])]).contains("IPv6.Route: unknown key (did you mean Routes?)"))
        #expect(Self.error(["Pol": Self.pool]).contains("IPv6.Pol: unknown key (did you mean Pool?)"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("fd00:90::2"), "EndAdress": .string("fd00:90::3")])])
            .contains("IPv6.Pool.EndAdress: unknown key (did you mean EndAddress?)"))
        #expect(Self.error(["Pool": Self.pool, "Routes": .array([.dictionary(["Address": .string("fd00:2::"), "PrefixLenght": .integer(64)])])])
            .contains("did you mean PrefixLength?"))
        let top = (try? TunnelServerConfiguration(propertyList: SampleConfiguration.with(["IPV6": .dictionary([:])]))).map { _ in "" }
        #expect(top == nil)
    }

    @Test(arguments: ["Address", "PrefixLength", "MTU"])
    func whatTheServerSetsPerLeaseIsRefusedInTheFile(key: String) {
        #expect(Self.error(["Pool": Self.pool, key: .string("1")]).contains("IPv6.\(key): the server sets this for each client"))
    }

    @Test func badPoolsAndRoutesAreRefusedWithTheReason() {
        #expect(Self.error([:]).contains("IPv6.Pool"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("10.0.0.1"), "EndAddress": .string("fd00::3")])])
            .contains("an IPv6 address"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("fd00::9"), "EndAddress": .string("fd00::3")])])
            .contains("comes after EndAddress"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("fe80::2"), "EndAddress": .string("fe80::9")])])
            .contains("cannot be a client's address"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("fd00::2"), "EndAddress": .string("fec0::1")])])
            .contains("reaches into link-local addresses (fe80::/10)"))
        #expect(Self.error(["Pool": .dictionary(["StartAddress": .string("::2"), "EndAddress": .string("::ffff:10.0.0.1")])])
            .contains("reaches into IPv4-mapped addresses"))
        #expect(Self.error(["Pool": Self.pool, "Routes": .array([Self.route("fd00:2::1", 64)])]).contains("did you mean fd00:2::/64?"))
        #expect(Self.error(["Pool": Self.pool, "Routes": .array([Self.route("fd00:2::", 129)])]).contains("IPv6.Routes"))
    }

    @Test func anIPv6DictionaryAloneMakesAnIPv6OnlyServer() throws {
        let configuration = try TunnelServerConfiguration(propertyList: .dictionary(["IPv6": .dictionary(["Pool": Self.pool])]))
        #expect(!configuration.offersIPv4)
        #expect(configuration.poolIsConfigured, "the IP layer starts from the file")
        let lease = configuration.configuration(forLease: nil, ipv6: IPv6Address("fd00:90::2"))
        #expect(lease["IPv4"] == nil)
        #expect(lease["IPv6"]?.dictionaryValue?["Address"] == .string("fd00:90::2"))
        // A file with neither family is a server for flows only, as before.
        let neither = try TunnelServerConfiguration(propertyList: .dictionary([:]))
        #expect(neither.offersIPv4 && !neither.poolIsConfigured)
    }
}
