import NIOCore
import Prometheus
import SimpleTunnelWire
import Testing
@testable import SimpleTunnelServices

/// A client that agreed to super-packets may send only ones that hold
/// together and make two segments or more; the rest are dropped, counted
/// under `reason="super_packet"` and logged (PROTOCOL.md B8).
@Suite("IP layer: a client's super-packets are checked before the device", .timeLimit(.minutes(3)))
struct PeerSuperPacketCheckTests {
    static let lease = IPv4Address(10, 90, 0, 2)

    static func packet(payload: Int, segmentSize: UInt16 = 1300, cut: Int = 0) -> TunnelPacket {
        let bytes = TCPTestFlow(isIPv4: true).superPacket(sequence: 9, payload: TCPTestFlow.payload(payload), flags: TCPTestFlow.ack)
        return TunnelPacket(bytes: ByteBuffer(bytes: bytes.dropLast(cut)), segmentSize: segmentSize)
    }

    @Test func oneSegmentAndMalformedOnesAreDroppedCountedAndLogged() throws {
        let registry = PrometheusCollectorRegistry()
        let device = InMemoryPacketFlow(mtu: 1400, takesSuperPackets: true)
        let (logger, log) = CapturingLogHandler.logger()
        let router = PacketRouter(device: device, metrics: TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)), logger: logger)
        let good = Self.packet(payload: 4 * 1300 + 7)
        let oneSegment = Self.packet(payload: 1000)
        let cutShort = Self.packet(payload: 4 * 1300 + 7, cut: 100)
        router.send([good, oneSegment, cutShort], from: Self.lease, path: SuperPacketPath(offered: true, answer: [IPFlowConfigurationKey.superPackets: PropertyListValue(1)]))
        #expect(device.written == [good.bytes])
        #expect(router.counters.superPacketsDropped == 2)
        #expect(registry.emitToString().contains(#"simpletunnel_dropped_packets_total{reason="super_packet"} 2"#))
        let line = log.all.first { $0.message.hasPrefix("dropped super-packets") }
        #expect(line?.metadata["count"] == "2", "\(log.all)")
    }
}
