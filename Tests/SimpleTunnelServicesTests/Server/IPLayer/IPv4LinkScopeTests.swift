import NIOCore
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: clients' IPv4 multicast, broadcast and link-local stay on the tunnel's link")
struct IPv4LinkScopeTests {
    static let lease = PortRuleFailClosedTests.lease

    static func router(policy: DestinationPolicy, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) -> (PacketRouter, InMemoryPacketFlow) {
        PortRuleFailClosedTests.router(policy: policy, registry: registry)
    }

    @Test func multicastBroadcastAndLinkLocalStayOnTheLinkUnlessAnAllowAddressRuleOpensOne() throws {
        let registry = PrometheusCollectorRegistry()
        let (router, device) = Self.router(policy: try DestinationPolicy(allow: ["169.254.169.253:53", "*"], deny: []), registry: registry)
        let onLink = ["224.0.0.251", "239.255.255.250", "255.255.255.255", "169.254.169.254", "169.254.1.1"].map {
            ipv4Packet(from: Self.lease.description, to: $0, destinationPort: 53)
        } + [ipv4Packet(from: Self.lease.description, to: "169.254.169.253", protocolNumber: 6, destinationPort: 80)]
        // A cloud's resolver the operator opened, and an ordinary destination.
        let allowed = [
            ipv4Packet(from: Self.lease.description, to: "169.254.169.253", destinationPort: 53),
            ipv4Packet(from: Self.lease.description, to: "198.18.2.2", destinationPort: 53),
        ]
        router.send((onLink + allowed).map { TunnelPacket(bytes: $0) }, from: Self.lease)
        #expect(device.written == allowed)
        #expect(router.counters.linkScopedDropped == UInt64(onLink.count))
        let exposition = registry.emitToString()
        #expect(exposition.contains(#"simpletunnel_dropped_packets_total{reason="link_scoped"} 6"#), "\(exposition)")
    }

    @Test func withoutRulesOnlyTheLinkScopedAreDropped() throws {
        let (router, device) = Self.router(policy: .allowAll)
        let packets = [ipv4Packet(from: Self.lease.description, to: "224.0.0.1"), ipv4Packet(from: Self.lease.description, to: "198.18.2.2")]
        router.send(packets.map { TunnelPacket(bytes: $0) }, from: Self.lease)
        #expect(device.written == [packets[1]])
        #expect(router.counters.linkScopedDropped == 1)
    }
}
