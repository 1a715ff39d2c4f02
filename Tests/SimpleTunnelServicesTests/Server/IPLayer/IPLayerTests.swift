import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A minimal IPv4 packet from `source` to `destination`: UDP (17) with
/// `destinationPort` unless another protocol is given; the rest is zeros.
func ipv4Packet(
    from source: String, to destination: String, payload: Int = 8, protocolNumber: UInt8 = 17, destinationPort: UInt16 = 0
) -> ByteBuffer {
    var packet = ByteBuffer()
    let total = 20 + 8 + payload
    packet.writeInteger(UInt8(0x45))
    packet.writeInteger(UInt8(0))
    packet.writeInteger(UInt16(total))
    packet.writeInteger(UInt32(0))
    packet.writeInteger(UInt8(64))
    packet.writeInteger(protocolNumber)
    packet.writeInteger(UInt16(0))
    packet.writeInteger(IPv4Address(source)?.rawValue ?? 0)
    packet.writeInteger(IPv4Address(destination)?.rawValue ?? 0)
    packet.writeInteger(UInt16(40000))
    packet.writeInteger(destinationPort)
    packet.writeRepeatingByte(0, count: 4 + payload)
    return packet
}

@Suite("IP layer: pool, router, anti-spoofing", .timeLimit(.minutes(2)))
struct IPLayerTests {
    static func configuration(_ start: String, _ end: String) throws -> TunnelServerConfiguration {
        try TunnelServerConfiguration(propertyList: .dictionary([
            "IPv4": .dictionary([
                "Pool": .dictionary(["StartAddress": .string(start), "EndAddress": .string(end)]),
                "Routes": .array([.dictionary(["Address": .string("198.18.2.0"), "Netmask": .string("255.255.255.0")])]),
            ]),
            "DNS": .dictionary(["Servers": .array([.string("10.90.0.1")])]),
        ]))
    }

    /// - Parameter ipv6Pool: set, the server is dual stack and leases from it too.
    static func start(
        pool start: String = "10.90.0.2", _ end: String = "10.90.0.254", leaseFile: LeaseFile? = nil,
        authentication: TunnelServer.Settings.Authentication? = nil, policy: DestinationPolicy = .allowAll,
        ipv6Pool: ClosedRange<IPv6Address>? = nil, access: AccessRules = .none
    ) async throws -> (RawServerFixture, InMemoryPacketFlow, ServerIPLayer) {
        let device = InMemoryPacketFlow()
        var configuration = try configuration(start, end)
        configuration.ipv6Pool = ipv6Pool
        let router = PacketRouter(device: device, policy: policy, logger: TunnelFixture.logger)
        let layer = ServerIPLayer(
            pool: try AddressPool(range: configuration.pool, ipv6Range: ipv6Pool, file: leaseFile), router: router, configuration: configuration)
        let fixture = try await RawServerFixture.start {
            $0.ipLayer = layer
            $0.authentication = authentication
            $0.access = access
        }
        router.start()
        return (fixture, device, layer)
    }

    @Test func thePoolIsInclusiveLowestFirstAndReusesReleasedAddresses() throws {
        let pool = try AddressPool(range: try #require(IPv4Address("192.168.2.2"))...(try #require(IPv4Address("192.168.2.10"))))
        let leases = (0..<9).compactMap { _ in pool.lease() }
        #expect(leases.map { $0.address?.description } == (2...10).map { "192.168.2.\($0)" })
        #expect(pool.lease() == nil)
        #expect(pool.release(leases[3]))
        #expect(!pool.release(leases[3]), "a second release of the same lease changes nothing")
        #expect(pool.lease()?.address?.description == "192.168.2.5")
    }

    @Test func anIPOpenGetsItsLeaseAndThePersonalisedConfiguration() async throws {
        let (fixture, _, _) = try await Self.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        guard case .openResult(1, .success, let configuration?, _)? = await peer.next() else {
            Issue.record("no successful open result")
            return
        }
        let ipv4 = configuration["IPv4"]?.dictionaryValue
        #expect(ipv4?["Address"] == .string("10.90.0.2"))
        #expect(ipv4?["Netmask"] == .string("255.255.255.255"))
        #expect(ipv4?["Pool"] == nil)
        #expect(ipv4?["Routes"] != nil)
        #expect(configuration["DNS"] != nil)
        await peer.close()
        await fixture.stop()
    }

    @Test func packetsFromTheLeaseReachTheDeviceAndSpoofedOnesAreDroppedAndCounted() async throws {
        let (fixture, device, layer) = try await Self.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        _ = await peer.next()
        let good = ipv4Packet(from: "10.90.0.2", to: "198.18.2.2")
        let spoofed = ipv4Packet(from: "10.90.0.77", to: "198.18.2.2")
        let ipv6 = ByteBuffer(bytes: [0x60] + [UInt8](repeating: 0, count: 39))
        try await peer.send(.packets(identifier: 1, packets: [
            TunnelPacket(bytes: good, protocolNumber: 2),
            TunnelPacket(bytes: spoofed, protocolNumber: 2),
            TunnelPacket(bytes: ipv6, protocolNumber: 30),
            // The protocol number lies; the version nibble decides.
            TunnelPacket(bytes: good, protocolNumber: 30),
        ]))
        for _ in 0..<100 where device.written.count < 2 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(device.written == [good, good])
        #expect(layer.router.counters.spoofedDropped == 1)
        #expect(layer.router.counters.nonIPv4Dropped == 1)
        await peer.close()
        await fixture.stop()
    }

    @Test func packetsFromTheDeviceGoToTheLeaseHolderInBatchesOf32() async throws {
        let (fixture, device, _) = try await Self.start()
        let first = try await fixture.peer()
        let second = try await fixture.peer()
        try await first.send(.open(identifier: 1, request: .plainIP))
        _ = await first.next()
        try await second.send(.open(identifier: 1, request: .plainIP))
        _ = await second.next()
        device.inject((0..<40).map { ipv4Packet(from: "198.18.2.2", to: "10.90.0.3", payload: $0) } + [ipv4Packet(from: "198.18.2.2", to: "10.90.0.2")])
        var received: [[TunnelPacket]] = []
        while received.flatMap({ $0 }).count < 40, let message = await second.next(timeout: .seconds(5)) {
            if case .packets(1, let packets) = message { received.append(packets) }
        }
        #expect(received.allSatisfy { $0.count <= 32 })
        #expect(received.flatMap { $0 }.map(\.bytes.readableBytes) == (0..<40).map { 28 + $0 })
        #expect(received.flatMap { $0 }.allSatisfy { $0.protocolNumber == TunnelPacket.ProtocolNumber.ipv4 })
        guard case .packets(1, let mine)? = await first.next() else {
            Issue.record("the first client got nothing")
            return
        }
        #expect(mine.count == 1)
        await first.close()
        await second.close()
        await fixture.stop()
    }

    @Test func anExhaustedPoolAnswersThreeAndALeaseIsReusedAfterDisconnect() async throws {
        let (fixture, _, layer) = try await Self.start(pool: "10.90.0.2", "10.90.0.3")
        let a = try await fixture.peer()
        let b = try await fixture.peer()
        let c = try await fixture.peer()
        for peer in [a, b] {
            try await peer.send(.open(identifier: 1, request: .plainIP))
            guard case .openResult(1, .success, _, _)? = await peer.next() else {
                Issue.record("open failed")
                return
            }
        }
        try await c.send(.open(identifier: 1, request: .plainIP))
        #expect(await c.next() == .openResult(identifier: 1, result: .refused))
        await a.close()
        for _ in 0..<100 where layer.pool.leasedCount > 1 {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await c.send(.open(identifier: 2, request: .plainIP))
        guard case .openResult(2, .success, let configuration?, _)? = await c.next() else {
            Issue.record("the freed lease was not reused")
            return
        }
        #expect(configuration["IPv4"]?.dictionaryValue?["Address"] == .string("10.90.0.2"))
        await b.close()
        await c.close()
        await fixture.stop()
    }

    @Test func withoutAnIPLayerAnIPOpenGetsFive() async throws {
        let fixture = try await RawServerFixture.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        #expect(await peer.next() == .openResult(identifier: 1, result: .internalError))
        await peer.close()
        await fixture.stop()
    }
}
