import Testing
@testable import SimpleTunnelServices

@Suite("Kill switch: when a tunnel gets one, and what its table lets out", .timeLimit(.minutes(3)))
struct KillSwitchRulesTests {
    /// `routes`: pushed IPv4 routes as (address, netmask); `ipv6Routes`: none for no IPv6 lease, `.some(nil)` for all IPv6.
    func settings(routes: [(String, String)]?, ipv6Routes: [IPv6Network]?? = .none) throws -> IPTunnelSettings {
        var configuration: [String: PropertyListValue] = ["IPv4": .dictionary(["Address": .string("10.90.0.2")])]
        if let routes {
            configuration["IPv4"] = .dictionary([
                "Address": .string("10.90.0.2"),
                "Routes": .array(routes.map { .dictionary(["Address": .string($0.0), "Netmask": .string($0.1)]) }),
            ])
        }
        var parsed = try IPTunnelSettings(configuration: configuration)
        if case .some(let ipv6Routes) = ipv6Routes {
            parsed.ipv6 = .init(address: IPv6Address("fd00:90::2")!, prefixLength: 128, routes: ipv6Routes)
        }
        return parsed
    }

    @Test func onlyATunnelThatCarriesEverythingGetsOne() throws {
        let options = IPTunnelOptions()
        #expect(KillSwitchRules.wanted(try settings(routes: nil), options: options))
        #expect(KillSwitchRules.wanted(try settings(routes: nil, ipv6Routes: .some(nil)), options: options))
        // Split tunnels mean other traffic to go out directly.
        #expect(!KillSwitchRules.wanted(try settings(routes: [("198.18.2.0", "255.255.255.0")]), options: options))
        #expect(!KillSwitchRules.wanted(try settings(routes: nil, ipv6Routes: .some([try IPv6Network(parsing: "fd00:2::/64")])), options: options))
        var off = options
        off.killSwitch = false
        #expect(!KillSwitchRules.wanted(try settings(routes: nil), options: off))
        var noRoutes = options
        noRoutes.applyRoutes = false
        #expect(!KillSwitchRules.wanted(try settings(routes: nil), options: noRoutes))
    }

    @Test func theTableLetsOutTheDeviceLoopbackTheMarkedSocketAndTheListedLANOnly() throws {
        let rules = KillSwitchRules(device: "stun1", allowedLAN: [try IPNetworkChoice(parsing: "192.168.1.0/24"), try IPNetworkChoice(parsing: "fd00:aa::/64")])
        #expect(rules.tableName == "simpletunnel_client_stun1")
        let script = rules.script
        #expect(script.hasPrefix("table inet simpletunnel_client_stun1 {}\ndelete table inet simpletunnel_client_stun1\n"), "\(script)")
        for line in [
            "type filter hook output priority filter; policy drop;", "type filter hook forward priority filter; policy drop;",
            "oifname \"lo\" accept", "oifname \"stun1\" accept", "meta mark 0x53540000 accept",
            "ip daddr { 192.168.1.0/24 } accept", "ip6 daddr { fd00:aa::/64 } accept",
        ] {
            #expect(script.contains(line), "\(line) missing from\n\(script)")
        }
        #expect(rules.summary.contains("192.168.1.0/24, fd00:aa::/64"), "\(rules.summary)")
        let closed = KillSwitchRules(device: "stun1").script
        #expect(!closed.contains("daddr"), "\(closed)")
        #expect(KillSwitchRules(device: "vpn-0.x").tableName == "simpletunnel_client_vpn_0_x")
    }

    @Test func aNetworkOfEitherFamilyIsTakenAndHostBitsAreRefused() throws {
        #expect(try IPNetworkChoice(parsing: "10.0.0.0/8") == .v4(try IPv4Network(parsing: "10.0.0.0/8")))
        #expect(try IPNetworkChoice(parsing: "fe80::/10") == .v6(try IPv6Network(parsing: "fe80::/10")))
        #expect(throws: NetworkParseError.self) { try IPNetworkChoice(parsing: "printer") }
    }
}
