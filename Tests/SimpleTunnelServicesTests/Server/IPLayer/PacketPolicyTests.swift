import NIOCore
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: the destination policy applies to clients' packets", .timeLimit(.minutes(2)))
struct PacketPolicyTests {
    static let lease = "10.90.0.2"

    static func filter(allow: [String] = [], deny: [String] = [], publicListener: Bool = true) throws -> PacketDestinationFilter {
        let policy = try DestinationPolicy(allow: allow, deny: deny)
        return PacketDestinationFilter(publicListener ? policy.withPublicListenerDefaults() : policy)
    }

    static func refuses(_ filter: PacketDestinationFilter, _ packet: ByteBuffer) throws -> Bool {
        let destination = try #require(IPv4PacketHeader.addresses(of: packet)?.destination)
        return filter.verdict(for: destination, port: IPv4PacketHeader.destinationPort(of: packet)) != .allowed
    }

    @Test func packetsFromAClientToRefusedDestinationsAreDroppedAndCounted() async throws {
        let policy = try DestinationPolicy(allow: [], deny: ["198.18.2.9", "198.18.3.0/24:22"]).withPublicListenerDefaults()
        let (fixture, device, layer) = try await IPLayerTests.start(policy: policy)
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        _ = await peer.next()
        let refused = [
            ipv4Packet(from: Self.lease, to: "127.0.0.1", destinationPort: 22),
            ipv4Packet(from: Self.lease, to: "0.0.0.0", destinationPort: 22),
            ipv4Packet(from: Self.lease, to: "198.18.2.9", protocolNumber: 1),
            ipv4Packet(from: Self.lease, to: "198.18.3.5", protocolNumber: 6, destinationPort: 22),
        ]
        let allowed = [
            ipv4Packet(from: Self.lease, to: "198.18.3.5", protocolNumber: 6, destinationPort: 23),
            ipv4Packet(from: Self.lease, to: "198.18.2.2", destinationPort: 53),
        ]
        try await peer.send(.packets(identifier: 1, packets: (refused + allowed).map { TunnelPacket(bytes: $0, protocolNumber: 2) }))
        #expect(await Loopback.waitUntil { device.written.count >= allowed.count })
        // One batch: what was dropped is counted before anything is written.
        #expect(device.written == allowed)
        #expect(layer.router.counters.policyDropped == UInt64(refused.count))
        #expect(layer.router.counters.spoofedDropped == 0)
        await peer.close()
        await fixture.stop()
    }

    @Test func theDropsAreAMetricWithTheirOwnReason() throws {
        let registry = PrometheusCollectorRegistry()
        let device = InMemoryPacketFlow()
        let router = PacketRouter(
            device: device, policy: DestinationPolicy.allowAll.withPublicListenerDefaults(),
            metrics: TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)), logger: TunnelFixture.logger)
        let packets = ["127.0.0.2", "127.0.0.1", "198.18.2.2"].map {
            TunnelPacket(bytes: ipv4Packet(from: Self.lease, to: $0), protocolNumber: 2)
        }
        router.send(packets, from: try #require(IPv4Address(Self.lease)))
        #expect(device.written.count == 1)
        let exposition = registry.emitToString()
        #expect(exposition.contains(#"simpletunnel_dropped_packets_total{reason="policy"} 2"#), "\(exposition)")
    }

    @Test func withoutRulesOnALoopbackListenerNothingIsFiltered() throws {
        let filter = try Self.filter(publicListener: false)
        #expect(filter.isEmpty)
        #expect(try !Self.refuses(filter, ipv4Packet(from: Self.lease, to: "127.0.0.1")))
    }

    @Test func portRulesSeeTCPAndUDPPortsOnly() throws {
        let filter = try Self.filter(deny: ["198.18.3.0/24:22"])
        #expect(try Self.refuses(filter, ipv4Packet(from: Self.lease, to: "198.18.3.1", protocolNumber: 6, destinationPort: 22)))
        #expect(try Self.refuses(filter, ipv4Packet(from: Self.lease, to: "198.18.3.1", protocolNumber: 17, destinationPort: 22)))
        #expect(try !Self.refuses(filter, ipv4Packet(from: Self.lease, to: "198.18.3.1", protocolNumber: 6, destinationPort: 2222)))
        // ICMP has no port: a rule about port 22 is not about it.
        #expect(try !Self.refuses(filter, ipv4Packet(from: Self.lease, to: "198.18.3.1", protocolNumber: 1, destinationPort: 22)))
        // A later fragment carries no port header; its bytes are not read as one.
        var fragment = ipv4Packet(from: Self.lease, to: "198.18.3.1", protocolNumber: 6, destinationPort: 22)
        fragment.setInteger(UInt16(0x0010), at: 6)
        #expect(IPv4PacketHeader.destinationPort(of: fragment) == .noPort)
        // Options lengthen the header: the port is found after them.
        var withOptions = ipv4Packet(from: Self.lease, to: "198.18.3.1", payload: 12, protocolNumber: 6, destinationPort: 0)
        withOptions.setInteger(UInt8(0x46), at: 0)
        withOptions.setInteger(UInt16(22), at: 26)
        #expect(IPv4PacketHeader.destinationPort(of: withOptions) == .port(22))
    }

    @Test func anAllowAddressRuleOpensADefaultDenialForPackets() throws {
        let filter = try Self.filter(allow: ["169.254.169.254:53"])
        #expect(try !Self.refuses(filter, ipv4Packet(from: Self.lease, to: "169.254.169.254", destinationPort: 53)))
        #expect(try Self.refuses(filter, ipv4Packet(from: Self.lease, to: "169.254.169.254", protocolNumber: 6, destinationPort: 80)))
        #expect(try Self.refuses(filter, ipv4Packet(from: Self.lease, to: "169.254.169.254", protocolNumber: 1)))
        // Allow lists restrict flows, not packets: other destinations still pass.
        #expect(try !Self.refuses(filter, ipv4Packet(from: Self.lease, to: "198.18.2.2", protocolNumber: 1)))
        // `*` denies every packet; name rules match none.
        #expect(try Self.refuses(Self.filter(deny: ["*"], publicListener: false), ipv4Packet(from: Self.lease, to: "198.18.2.2")))
        #expect(try !Self.refuses(Self.filter(deny: ["db.internal"], publicListener: false), ipv4Packet(from: Self.lease, to: "198.18.2.2")))
    }
}
