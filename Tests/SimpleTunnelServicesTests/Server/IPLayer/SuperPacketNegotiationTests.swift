import NIOCore
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// The server's side of super-packets (PROTOCOL.md B8), through a real
/// tunnel connection: agreed only on an offer and a device that takes them,
/// then carried whole both ways; otherwise cut for the client and refused from it.
@Suite("IP layer: super-packets agreed, carried and refused", .timeLimit(.minutes(3)))
struct SuperPacketNegotiationTests {
    static let mtu = 1400

    static func start(deviceTakesThem: Bool) async throws -> (RawServerFixture, InMemoryPacketFlow, ServerIPLayer) {
        let device = InMemoryPacketFlow(mtu: mtu, takesSuperPackets: deviceTakesThem)
        let configuration = try IPLayerTests.configuration("10.90.0.2", "10.90.0.254")
        let router = PacketRouter(device: device, logger: TunnelFixture.logger)
        let layer = ServerIPLayer(pool: try AddressPool(range: configuration.pool), router: router, configuration: configuration)
        let fixture = try await RawServerFixture.start { $0.ipLayer = layer }
        router.start()
        return (fixture, device, layer)
    }

    /// A super-packet from the client's lease to a destination behind the server, as its kernel read it.
    static func upload(isIPv4: Bool = true) -> TunnelPacket {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let bytes = flow.superPacket(sequence: 9, payload: TCPTestFlow.payload(4 * 1300 + 7), flags: TCPTestFlow.ack)
        return TunnelPacket(bytes: ByteBuffer(bytes: bytes), segmentSize: 1300)
    }

    /// A super-packet from the destination to the client's lease.
    static func download() -> TunnelPacket {
        var flow = TCPTestFlow(isIPv4: true)
        flow.sourcePort = 5201
        flow.destinationPort = 40_000
        var bytes = flow.superPacket(sequence: 9, payload: TCPTestFlow.payload(3 * 1300 + 1), flags: TCPTestFlow.ack)
        // From 198.18.2.2 to the lease 10.90.0.2: the addresses swapped, the header checksum made again.
        bytes.replaceSubrange(12..<20, with: TCPTestFlow.destinationIPv4 + TCPTestFlow.sourceIPv4)
        bytes[10] = 0
        bytes[11] = 0
        let sum = IPv4TestPackets.checksum(Array(bytes[..<20]))
        bytes[10] = UInt8(sum >> 8)
        bytes[11] = UInt8(sum & 0xFF)
        return TunnelPacket(bytes: ByteBuffer(bytes: bytes), segmentSize: 1300)
    }

    func open(_ peer: RawTunnelPeer, offer: Bool) async throws -> [String: PropertyListValue] {
        try await peer.send(.open(identifier: 1, request: .ip(offersSuperPackets: offer)))
        guard case .openResult(1, .success, let configuration?, _)? = await peer.next() else {
            Issue.record("no successful open result")
            return [:]
        }
        return configuration
    }

    func nextPackets(_ peer: RawTunnelPeer) async -> [TunnelPacket] {
        while let message = await peer.next() {
            if case .packets(1, let packets) = message { return packets }
        }
        return []
    }

    @Test func anOfferToADeviceThatTakesThemIsAgreedAndSuperPacketsCrossWholeBothWays() async throws {
        let (fixture, device, _) = try await Self.start(deviceTakesThem: true)
        let peer = try await fixture.peer()
        let configuration = try await open(peer, offer: true)
        #expect(configuration[IPFlowConfigurationKey.superPackets] == .integer(1))

        let upload = Self.upload()
        try await peer.send(.packets(identifier: 1, packets: [upload]))
        #expect(await AdmissionPeers.eventually { device.writtenPackets.count == 1 })
        #expect(device.writtenPackets == [upload], "whole, with its segment size")

        let download = Self.download()
        device.inject([download])
        #expect(await nextPackets(peer) == [download])
        await peer.close()
        await fixture.stop()
    }

    @Test func withoutAnOfferTheClientGetsMTUSizedPacketsAndMayNotSendSuperPackets() async throws {
        let (fixture, device, layer) = try await Self.start(deviceTakesThem: true)
        let peer = try await fixture.peer()
        let configuration = try await open(peer, offer: false)
        #expect(configuration[IPFlowConfigurationKey.superPackets] == nil, "Apple's client is never told of them")

        device.inject([Self.download()])
        let received = await nextPackets(peer)
        #expect(received.count == 4, "cut into its segments")
        #expect(received.allSatisfy { !$0.isSuperPacket && $0.bytes.readableBytes <= Self.mtu })
        #expect(received.map { Array($0.bytes.readableBytesView) }.allSatisfy(TCPTestChecks.checksumsVerify))

        let ordinary = TunnelPacket(bytes: ipv4Packet(from: "10.90.0.2", to: "198.18.2.2"))
        try await peer.send(.packets(identifier: 1, packets: [Self.upload(), ordinary]))
        #expect(await AdmissionPeers.eventually { device.writtenPackets.count == 1 })
        #expect(device.writtenPackets == [ordinary])
        #expect(layer.router.counters.superPacketsDropped == 1)
        await peer.close()
        await fixture.stop()
    }

    @Test func anOfferToADeviceWithoutOffloadsIsNotAgreed() async throws {
        let (fixture, _, _) = try await Self.start(deviceTakesThem: false)
        let peer = try await fixture.peer()
        let configuration = try await open(peer, offer: true)
        #expect(configuration[IPFlowConfigurationKey.superPackets] == nil)
        await peer.close()
        await fixture.stop()
    }
    /// A super-packet the server's device hands over that cannot be cut (its
    /// IP length no longer matches its bytes) is dropped and counted for a
    /// client that takes none; the good one beside it still arrives, cut.
    @Test func aSuperPacketThatCannotBeCutForTheClientIsCountedAndItsNeighbourGoes() async throws {
        let (fixture, device, layer) = try await Self.start(deviceTakesThem: true)
        let peer = try await fixture.peer()
        _ = try await open(peer, offer: false)

        var broken = Self.download()
        broken.bytes.moveWriterIndex(to: broken.bytes.writerIndex - 1)
        device.inject([broken, Self.download()])
        let received = await nextPackets(peer)
        #expect(received.count == 4, "the good one, cut into its segments")
        #expect(received.map { Array($0.bytes.readableBytesView) }.allSatisfy(TCPTestChecks.checksumsVerify))
        #expect(layer.router.counters.uncutSuperPacketsDropped == 1)
        await peer.close()
        await fixture.stop()
    }
}
