import Testing
@testable import SimpleTunnelServices

@Suite("The pool's routes on the server's device")
struct PoolRoutesTests {
    static func v4(_ low: String, _ high: String, server: String?) throws -> [String] {
        let pool = try #require(IPv4Address(low))...(try #require(IPv4Address(high)))
        return PoolRoutes.ipv4(pool: pool, server: try server.map { try #require(IPv4Address($0)) }).map(\.description)
    }

    static func v6(_ low: String, _ high: String, server: String?) throws -> [String] {
        let pool = try #require(IPv6Address(low))...(try #require(IPv6Address(high)))
        return PoolRoutes.ipv6(pool: pool, server: try server.map { try #require(IPv6Address($0)) }).map(\.description)
    }

    @Test func theDefaultPoolsTakeOneRouteEachWithTheServerInside() throws {
        // What OpenVPN does: the server's own .1 is delivered locally before any route.
        #expect(try Self.v4("10.90.0.2", "10.90.0.254", server: "10.90.0.1") == ["10.90.0.0/24"])
        #expect(try Self.v6("fd00:90::2", "fd00:90::ffff", server: "fd00:90::1") == ["fd00:90::/112"])
    }

    @Test func aPrefixThatWouldTakeAnotherHostsAddressIsNotUsed() throws {
        // 10.90.0.1 is not the server's here: someone else may have it, so the pool is covered exactly.
        #expect(try Self.v4("10.90.0.2", "10.90.0.254", server: "10.91.0.1").count == 13)
        // Half a /24: the /24 would take .129-.254 too.
        #expect(try Self.v4("10.90.0.2", "10.90.0.126", server: "10.90.0.1") == ["10.90.0.0/25"])
        // Nothing lone fits: the pool's own cover, as the server's address beside it would add one.
        #expect(
            try Self.v4("10.90.0.2", "10.90.0.100", server: "10.90.0.1")
                == IPv4Network.covering(IPv4Address(10, 90, 0, 2)...IPv4Address(10, 90, 0, 100)).map(\.description))
        // IPv6 has no broadcast: a pool one short of its prefix's top leaves the top to another host.
        #expect(try Self.v6("fd00:90::2", "fd00:90::fffe", server: "fd00:90::1").count > 1)
    }

    @Test func theServersAddressJustAboveThePoolMayJoinItsCover() throws {
        #expect(try Self.v4("10.90.0.0", "10.90.0.14", server: "10.90.0.15") == ["10.90.0.0/28"])
        #expect(try Self.v4("10.90.0.1", "10.90.0.6", server: "10.90.0.7") == ["10.90.0.0/29"])
    }

    @Test func aPoolWithTheServerFarAwayIsCoveredExactly() throws {
        #expect(try Self.v4("10.90.0.1", "10.90.0.254", server: "192.168.5.1") == ["10.90.0.0/24"], "only .0 and .255 are left, which no host has")
        #expect(try Self.v4("10.90.0.3", "10.90.0.3", server: "10.90.0.1") == ["10.90.0.3/32"])
        #expect(try Self.v4("10.90.0.2", "10.90.0.3", server: nil) == ["10.90.0.2/31"])
        #expect(try Self.v6("fd00::3", "fd00::3", server: "fd00::1") == ["fd00::3/128"])
    }

    @Test func everyRouteSetCoversThePoolAndNoAddressItMustNot() throws {
        // Exhaustive over small pools in one /27, with the server just below, just above or away. The
        // findings are gathered and checked once: an #expect per address made this a half-minute of one
        // core, which starved the rest of a parallel run.
        let base: UInt32 = IPv4Address(10, 90, 0, 0).rawValue
        var findings: [String] = []
        for low in UInt32(1)...30 {
            for high in low...30 {
                for server in [low - 1, high + 1, 200] {
                    let pool = IPv4Address(rawValue: base + low)...IPv4Address(rawValue: base + high)
                    let routes = PoolRoutes.ipv4(pool: pool, server: IPv4Address(rawValue: base + server))
                    if routes.count > IPv4Network.covering(pool).count { findings.append("\(pool): \(routes) is more than the exact cover") }
                    // Beside the pool, a route may take only the server's address, or a lone prefix's first and last.
                    let lone = routes.count == 1 ? routes[0] : nil
                    let first = lone.map { $0.address.rawValue - base }
                    let last = lone.map { $0.address.rawValue - base + UInt32((UInt64(1) << (32 - $0.prefixLength)) - 1) }
                    for offset in UInt32(0)...255 {
                        let covered = routes.contains { $0.contains(IPv4Address(rawValue: base + offset)) }
                        if (low...high).contains(offset) {
                            if !covered { findings.append("\(pool) \(routes) misses .\(offset)") }
                        } else if covered && offset != server && offset != first && offset != last {
                            findings.append("\(pool) server .\(server) \(routes) takes .\(offset)")
                        }
                    }
                }
            }
        }
        #expect(findings.isEmpty, "\(findings.prefix(10))")
    }

    @Test func theStartLogNamesWhatClientsRouteInBothFamilies() {
        var configuration = TunnelServerConfiguration.embeddedDefault
        #expect(ServerIPLayer.describeClientsRoute(configuration) == "all traffic (no Routes)")
        configuration.routes = [IPv4Network(address: IPv4Address(10, 0, 0, 0), prefixLength: 8)!]
        configuration.ipv6Pool = IPv6Address("fd00:90::2")!...IPv6Address("fd00:90::ffff")!
        #expect(ServerIPLayer.describeClientsRoute(configuration) == "10.0.0.0/8; IPv6 all traffic (no IPv6.Routes)")
        configuration.ipv6Routes = [IPv6Network(address: IPv6Address("fd00:1::")!, prefixLength: 64)!]
        #expect(ServerIPLayer.describeClientsRoute(configuration) == "10.0.0.0/8; IPv6 fd00:1::/64")
        configuration.offersIPv4 = false
        configuration.ipv6Routes = []
        #expect(ServerIPLayer.describeClientsRoute(configuration) == "IPv6 nothing (an empty IPv6.Routes)")
    }
}
