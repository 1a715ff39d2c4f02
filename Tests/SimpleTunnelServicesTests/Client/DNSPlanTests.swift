import Testing
@testable import SimpleTunnelServices

/// What `--dns` applies, decided from the mode, what the server pushed and what the tunnel carries.
@Suite("The client's DNS plan")
struct DNSPlanTests {
    let servers: [IPAddress] = [.v4(IPv4Address(10, 90, 0, 1))]

    func plan(_ mode: DNSMode, everything: Bool, search: [String] = ["corp.example"], match: [String] = [], noSearch: Bool = false) -> DNSPlan? {
        DNSPlan.decide(
            mode: mode, servers: servers, searchDomains: search, matchDomains: match, matchDomainsNoSearch: noSearch,
            tunnelCarriesEverything: everything)
    }

    @Test func autoFollowsWhatTheTunnelCarries() {
        #expect(plan(.auto, everything: true)?.carriesEverything == true)
        #expect(plan(.auto, everything: false)?.carriesEverything == false)
        #expect(plan(.full, everything: false)?.carriesEverything == true, "full overrides a split tunnel")
        #expect(plan(.split, everything: true)?.carriesEverything == false, "split overrides a full tunnel")
    }

    @Test func offOrNoServersAppliesNothing() {
        #expect(plan(.off, everything: true) == nil)
        #expect(DNSPlan.decide(mode: .full, servers: [], searchDomains: ["a"], matchDomains: [], matchDomainsNoSearch: false, tunnelCarriesEverything: true) == nil)
    }

    @Test func matchDomainsAreSearchedUnlessToldNotToAndAnEmptyOneMatchesEverything() {
        #expect(plan(.split, everything: false, match: ["internal.example"])?.searchDomains == ["corp.example", "internal.example"])
        let routingOnly = plan(.split, everything: false, match: ["internal.example"], noSearch: true)
        #expect(routingOnly?.searchDomains == ["corp.example"])
        #expect(routingOnly?.routingDomains == ["internal.example"])
        #expect(routingOnly?.resolvedDomains == ["corp.example", "~internal.example"])
        #expect(plan(.split, everything: false, match: [""])?.carriesEverything == true)
        #expect(plan(.full, everything: true)?.resolvedDomains == ["corp.example", "~."])
    }

    @Test func theSessionCallsATunnelWithPushedRoutesSplit() throws {
        func settings(routes: Bool) throws -> IPTunnelSettings {
            var ipv4: [String: PropertyListValue] = ["Address": .string("10.90.0.2"), "Netmask": .string("255.255.255.255")]
            if routes {
                ipv4["Routes"] = .array([.dictionary(["Address": .string("10.20.0.0"), "Netmask": .string("255.255.0.0")])])
            }
            return try IPTunnelSettings(configuration: [
                "IPv4": .dictionary(ipv4),
                "DNS": .dictionary(["Servers": .array([.string("10.90.0.1")]), "MatchDomains": .array([.string("corp.example")])]),
            ])
        }
        var options = IPTunnelOptions()
        options.dns = .auto
        #expect(IPTunnelSession.dnsPlan(try settings(routes: true), options: options)?.carriesEverything == false)
        #expect(IPTunnelSession.dnsPlan(try settings(routes: false), options: options)?.carriesEverything == true)
        #expect(IPTunnelSession.dnsPlan(try settings(routes: true), options: options)?.searchDomains == ["corp.example"])
        options.applyRoutes = false
        #expect(IPTunnelSession.dnsPlan(try settings(routes: false), options: options)?.carriesEverything == false, "--no-routes carries nothing by itself")
    }

    @Test func aBareDNSFlagMeansAuto() {
        #expect(DNSMode.rewritingBareFlag(["ip", "--dns", "--server", "x"]) == ["ip", "--dns=auto", "--server", "x"])
        #expect(DNSMode.rewritingBareFlag(["ip", "--server", "x", "--dns"]) == ["ip", "--server", "x", "--dns=auto"])
        #expect(DNSMode.rewritingBareFlag(["ip", "--dns", "split"]) == ["ip", "--dns", "split"])
    }
}
