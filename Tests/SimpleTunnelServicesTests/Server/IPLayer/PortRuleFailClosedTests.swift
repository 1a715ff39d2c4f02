import NIOCore
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: a port rule fails closed on a port it cannot find")
struct PortRuleFailClosedTests {
    static let lease = IPv4Address(10, 90, 0, 2)
    static let lease6 = "fd00:90::2"

    static func filter(allow: [String] = [], deny: [String] = [], publicListener: Bool = false) throws -> PacketDestinationFilter {
        let policy = try DestinationPolicy(allow: allow, deny: deny)
        return PacketDestinationFilter(publicListener ? policy.withPublicListenerDefaults() : policy)
    }

    static func verdict(_ filter: PacketDestinationFilter, _ destination: String, _ port: PortLookup) throws -> PacketDestinationFilter.Verdict {
        if let ipv4 = IPv4Address(destination) { return filter.verdict(for: ipv4, port: port) }
        return filter.verdict(for: try #require(IPv6Address(destination)), port: port)
    }

    @Test func aDenyRuleWithAPortRefusesWhatMightBeThatPortAndLeavesOtherAddressesAlone() throws {
        let filter = try Self.filter(deny: ["[fd00:211::2]:22", "198.18.3.0/24:22"])
        let hidden = PortLookup.undeterminable(.tooManyExtensionHeaders)
        #expect(try Self.verdict(filter, "fd00:211::2", hidden) == .portUndeterminable)
        #expect(try Self.verdict(filter, "fd00:211::2", .port(22)) == .refused)
        #expect(try Self.verdict(filter, "fd00:211::2", .port(80)) == .allowed)
        // ICMPv6 and later fragments have no port: a rule about port 22 is not about them.
        #expect(try Self.verdict(filter, "fd00:211::2", .noPort) == .allowed)
        // No port rule covers these addresses: an undeterminable port changes nothing.
        #expect(try Self.verdict(filter, "fd00:211::3", hidden) == .allowed)
        #expect(try Self.verdict(filter, "198.18.4.1", .undeterminable(.encrypted)) == .allowed)
        #expect(try Self.verdict(filter, "198.18.3.1", .undeterminable(.fragmentWithoutTransportHeader)) == .portUndeterminable)
        // An IPv4-mapped destination is judged as the IPv4 address too.
        #expect(try Self.verdict(filter, "::ffff:198.18.3.1", hidden) == .portUndeterminable)
    }

    @Test func aRuleWithoutPortsStillRefusesOutright() throws {
        let filter = try Self.filter(deny: ["fd00:211::5", "[fd00:211::/64]:22"])
        #expect(try Self.verdict(filter, "fd00:211::5", .undeterminable(.tooManyExtensionHeaders)) == .refused)
    }

    @Test func zeroNetworkIsJudgedAsLoopbackForAnUndeterminablePortToo() throws {
        let filter = try Self.filter(deny: ["127.0.0.1:22"])
        #expect(try Self.verdict(filter, "0.0.0.0", .undeterminable(.encrypted)) == .portUndeterminable)
    }

    @Test func aDefaultDenialOpenedOnlyForAPortStaysClosedToAnUndeterminablePort() throws {
        let byPort = try Self.filter(allow: ["127.0.0.1:5432", "*"], publicListener: true)
        #expect(try Self.verdict(byPort, "127.0.0.1", .port(5432)) == .allowed)
        #expect(try Self.verdict(byPort, "127.0.0.1", .undeterminable(.truncated)) == .portUndeterminable)
        #expect(try Self.verdict(byPort, "127.0.0.1", .noPort) == .refused)
        // Opened for every port, it is open whatever the port.
        let whole = try Self.filter(allow: ["127.0.0.1", "*"], publicListener: true)
        #expect(try Self.verdict(whole, "127.0.0.1", .undeterminable(.truncated)) == .allowed)
    }

    static func router(policy: DestinationPolicy, registry: PrometheusCollectorRegistry) -> (PacketRouter, InMemoryPacketFlow) {
        let device = InMemoryPacketFlow()
        let router = PacketRouter(
            device: device, policy: policy, metrics: TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)),
            logger: TunnelFixture.logger)
        return (router, device)
    }

    @Test func theRouterDropsASYNWhosePortHidesBehindNineOrMoreHeadersAndCountsItApart() throws {
        let registry = PrometheusCollectorRegistry()
        let (router, device) = Self.router(policy: try DestinationPolicy(allow: [], deny: ["[fd00:211::2]:22"]), registry: registry)
        let hidden = [9, 10, 12, 20].map { PortLookupTests.behindDestinationOptions($0) }
        let refused = [0, 1, 8].map { PortLookupTests.behindDestinationOptions($0) }
        let allowed = [
            PortLookupTests.behindDestinationOptions(8, port: 80),
            // Ordinary traffic with many headers still flows where no port rule applies.
            PortLookupTests.behindDestinationOptions(9, port: 80, to: "fd00:211::3"),
            PortLookupTests.behindDestinationOptions(20, port: 22, to: "fd00:211::3"),
        ]
        router.send((hidden + refused + allowed).map { TunnelPacket(bytes: $0) }, from: Self.lease, ipv6: IPv6Address(Self.lease6))
        #expect(device.written == allowed)
        #expect(router.counters.undeterminablePortDropped == UInt64(hidden.count))
        #expect(router.counters.policyDropped == UInt64(refused.count))
        let exposition = registry.emitToString()
        #expect(exposition.contains(#"simpletunnel_dropped_packets_total{reason="undeterminable_port"} 4"#), "\(exposition)")
    }

    @Test func theRouterDropsIPv4FirstFragmentsTooShortForThePort() throws {
        let (router, device) = Self.router(policy: try DestinationPolicy(allow: [], deny: ["198.18.3.0/24:22"]), registry: PrometheusCollectorRegistry())
        let cut = PortLookupTests.ipv4(fragment: 0x2000, cutTo: 22)
        let whole = PortLookupTests.ipv4(fragment: 0x2000)
        var elsewhere = cut
        elsewhere.setInteger(IPv4Address(198, 18, 4, 1).rawValue, at: 16)
        router.send([cut, whole, elsewhere].map { TunnelPacket(bytes: $0) }, from: Self.lease)
        #expect(device.written == [elsewhere])
        #expect(router.counters.undeterminablePortDropped == 1)
        #expect(router.counters.policyDropped == 1)
    }
}
