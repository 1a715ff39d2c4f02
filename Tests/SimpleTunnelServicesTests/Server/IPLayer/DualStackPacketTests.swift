import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: IPv6 packets from clients", .timeLimit(.minutes(3)))
struct DualStackPacketTests {
    static let lease = IPv4Address(10, 90, 0, 2)
    static let lease6 = "fd00:90::2"

    static func router(policy: DestinationPolicy = .allowAll, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry())
        -> (PacketRouter, InMemoryPacketFlow)
    {
        let device = InMemoryPacketFlow()
        let router = PacketRouter(
            device: device, policy: policy, metrics: TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)),
            logger: TunnelFixture.logger)
        return (router, device)
    }

    static func send(_ router: PacketRouter, _ packets: [ByteBuffer], ipv6: String? = lease6) throws {
        router.send(packets.map { TunnelPacket(bytes: $0) }, from: lease, ipv6: try ipv6.map { try #require(IPv6Address($0)) })
    }

    @Test func onlyTheClientsIPv6LeaseMaySendAndLinkScopedPacketsStayOnTheLink() throws {
        let registry = PrometheusCollectorRegistry()
        let (router, device) = Self.router(registry: registry)
        let good = IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2")
        let packets = [
            good,
            IPv6TestPackets.packet(from: "fd00:90::3", to: "fd00:2::2"),
            // A router solicitation from the client's TUN, and neighbour discovery to a link-local address.
            IPv6TestPackets.packet(from: "fe80::1", to: "ff02::2", nextHeader: 58),
            IPv6TestPackets.packet(from: Self.lease6, to: "fe80::2", nextHeader: 58),
        ]
        try Self.send(router, packets)
        #expect(device.written == [good])
        #expect(router.counters.spoofedDropped == 1)
        #expect(router.counters.linkScopedDropped == 2)
        let exposition = registry.emitToString()
        #expect(exposition.contains(#"simpletunnel_dropped_packets_total{reason="link_scoped"} 2"#), "\(exposition)")
        #expect(exposition.contains(#"simpletunnel_dropped_packets_total{reason="spoofed"} 1"#), "\(exposition)")
    }

    @Test func withoutAnIPv6LeaseEveryIPv6PacketIsDroppedAsBefore() throws {
        let (router, device) = Self.router()
        try Self.send(router, [IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2")], ipv6: nil)
        #expect(device.written.isEmpty)
        #expect(router.counters.nonIPv4Dropped == 1)
    }

    @Test func thePublicListenerDenialsAndIPv6RulesHoldForIPv6Destinations() throws {
        let policy = try DestinationPolicy(allow: [], deny: ["[fd00:3::/64]:22", "fd00:4::9"]).withPublicListenerDefaults()
        let (router, device) = Self.router(policy: policy)
        let refused = [
            IPv6TestPackets.packet(from: Self.lease6, to: "::1", nextHeader: 6, destinationPort: 22),
            IPv6TestPackets.packet(from: Self.lease6, to: "::", nextHeader: 6, destinationPort: 22),
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:ec2::254", nextHeader: 6, destinationPort: 80),
            IPv6TestPackets.packet(from: Self.lease6, to: "::ffff:127.0.0.1", destinationPort: 53),
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:4::9", nextHeader: 58),
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:3::5", nextHeader: 6, destinationPort: 22),
            // The port behind a hop-by-hop and a destination-options header still counts.
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:3::5", nextHeader: 6, destinationPort: 22, extensions: [(0, 0), (60, 1)]),
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:3::5", nextHeader: 6, destinationPort: 22, extensions: [(44, 0)]),
        ]
        let allowed = [
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:3::5", nextHeader: 6, destinationPort: 23),
            IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2", nextHeader: 58),
        ]
        try Self.send(router, refused + allowed)
        #expect(device.written == allowed)
        #expect(router.counters.policyDropped == UInt64(refused.count))
    }

    @Test func thePortIsFoundPastExtensionHeadersAndNotInALaterFragment() throws {
        let plain = IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2", nextHeader: 6, destinationPort: 443)
        #expect(IPv6PacketHeader.destinationPort(of: plain) == .port(443))
        let behind = IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2", destinationPort: 53, extensions: [(0, 0), (43, 2), (44, 0)])
        #expect(IPv6PacketHeader.destinationPort(of: behind) == .port(53))
        var later = Array(IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2", destinationPort: 53, extensions: [(44, 0)]).readableBytesView)
        later[40 + 3] = 0x08  // fragment offset 1
        #expect(IPv6PacketHeader.destinationPort(of: ByteBuffer(bytes: later)) == .noPort)
        #expect(IPv6PacketHeader.destinationPort(of: IPv6TestPackets.packet(from: Self.lease6, to: "fd00:2::2", nextHeader: 58)) == .noPort)
        #expect(IPv6PacketHeader.addresses(of: ByteBuffer(bytes: [0x60, 0, 0])) == nil)
    }

    @Test func packetsFromTheDeviceReachTheTunnelOfTheirIPv6DestinationAsProtocol30() async throws {
        let (router, device) = Self.router()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let delivered = NIOLockedValueBox<[TunnelPacket]>([])
        router.attach(Self.lease, ipv6: IPv6Address(Self.lease6), holder: 7, eventLoop: loop) { packets in
            delivered.withLockedValue { $0 += packets }
        }
        router.start()
        let reply = IPv6TestPackets.packet(from: "fd00:2::2", to: Self.lease6)
        device.inject([reply, IPv6TestPackets.packet(from: "fd00:2::2", to: "fd00:90::3")])
        #expect(await Loopback.waitUntil { !delivered.withLockedValue { $0 }.isEmpty })
        let packets = delivered.withLockedValue { $0 }
        #expect(packets.map(\.bytes) == [reply])
        #expect(packets.first?.protocolNumber == TunnelPacket.ProtocolNumber.ipv6)
        router.detach(Self.lease, ipv6: IPv6Address(Self.lease6), holder: 7)
        router.stop()
    }
}
