import Foundation
import NIOCore
import Prometheus
import Testing
@testable import SimpleTunnelServices

/// By default one client's packets never reach another client's lease; `--client-to-client` lets them.
@Suite("IP layer: clients isolated from one another", .timeLimit(.minutes(3)))
struct ClientIsolationTests {
    static let lease = IPv4Address(10, 90, 0, 2)
    static let lease6 = IPv6Address("fd00:90::2")!
    static let isolation = ClientIsolation(
        ipv4Pool: IPv4Address(10, 90, 0, 2)...IPv4Address(10, 90, 0, 254), ipv6Pool: IPv6Address("fd00:90::2")!...IPv6Address("fd00:90::ffff")!)

    static func packets() -> (toOthers: [ByteBuffer], toTheWorld: [ByteBuffer]) {
        let toOthers = [
            IPv4TestPackets.udp(from: lease, 5000, to: IPv4Address(10, 90, 0, 3), 53, payload: [1]),
            IPv4TestPackets.udp(from: lease, 5000, to: IPv4Address(10, 90, 0, 254), 80, payload: [2]),
            IPv6TestPackets.packet(from: "fd00:90::2", to: "fd00:90::3"),
        ]
        let toTheWorld = [
            // The server's own tunnel address is below the pool, and the networks behind it are outside.
            IPv4TestPackets.udp(from: lease, 5000, to: IPv4Address(10, 90, 0, 1), 53, payload: [3]),
            IPv4TestPackets.udp(from: lease, 5000, to: IPv4Address(198, 18, 2, 2), 53, payload: [4]),
            IPv6TestPackets.packet(from: "fd00:90::2", to: "fd00:2::2"),
        ]
        return (toOthers, toTheWorld)
    }

    @Test func anotherClientsLeaseIsDroppedAndCounted() throws {
        let registry = PrometheusCollectorRegistry()
        let device = InMemoryPacketFlow()
        let router = PacketRouter(
            device: device, isolation: Self.isolation, metrics: TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry)),
            logger: TunnelFixture.logger)
        let (toOthers, toTheWorld) = Self.packets()
        router.send((toOthers + toTheWorld).map { TunnelPacket(bytes: $0) }, from: Self.lease, ipv6: Self.lease6)
        #expect(device.written == toTheWorld)
        #expect(router.counters.otherClientDropped == 3)
        #expect(registry.emitToString().contains(#"simpletunnel_dropped_packets_total{reason="client_isolation"} 3"#))
    }

    @Test func clientToClientLetsThemTalk() throws {
        let device = InMemoryPacketFlow()
        let router = PacketRouter(device: device, isolation: nil, logger: TunnelFixture.logger)
        let (toOthers, toTheWorld) = Self.packets()
        router.send((toOthers + toTheWorld).map { TunnelPacket(bytes: $0) }, from: Self.lease, ipv6: Self.lease6)
        #expect(device.written == toOthers + toTheWorld)
    }

    @Test func theLaunchIsolatesUnlessTheFlagOrTheFileSaysOtherwise() throws {
        var options = TunnelServerLaunchOptions.none
        options.tun = "stun9"
        let state = NSTemporaryDirectory() + "isolation-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        options.stateDirectory = state
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).ipLayer?.options.clientIsolation == true)
        options.clientToClient = true
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).ipLayer?.options.clientIsolation == false)
    }
}
