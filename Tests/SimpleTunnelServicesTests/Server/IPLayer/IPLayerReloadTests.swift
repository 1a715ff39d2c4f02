import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: a reload's rules and routes", .timeLimit(.minutes(3)))
struct IPLayerReloadTests {
    static let lease = "10.90.0.2"

    @Test func aTunnelsNextPacketsMeetTheNewRulesAndTheNextLeaseGetsTheNewRoutes() async throws {
        let (fixture, device, layer) = try await IPLayerTests.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        _ = await peer.next()
        let packet = ipv4Packet(from: Self.lease, to: "198.18.2.9", destinationPort: 53)
        try await peer.send(.packets(identifier: 1, packets: [TunnelPacket(bytes: packet, protocolNumber: 2)]))
        #expect(await Loopback.waitUntil { device.written.count == 1 })

        var configuration = try IPLayerTests.configuration("10.90.0.2", "10.90.0.254")
        configuration.routes = [try IPv4Network(parsing: "198.18.0.0/15")]
        layer.update(configuration: configuration, policy: try DestinationPolicy(allow: [], deny: ["198.18.2.9"]))

        let marker = ipv4Packet(from: Self.lease, to: "198.18.2.10", destinationPort: 53)
        try await peer.send(.packets(identifier: 1, packets: [packet, marker].map { TunnelPacket(bytes: $0, protocolNumber: 2) }))
        #expect(await Loopback.waitUntil { device.written.count == 2 })
        #expect(device.written.last == marker)
        #expect(layer.router.counters.policyDropped == 1)

        let second = try await fixture.peer()
        try await second.send(.open(identifier: 1, request: .plainIP))
        guard case .openResult(1, .success, let pushed?, _) = await second.next(), case .dictionary(let ipv4)? = pushed["IPv4"],
            case .array(let routes)? = ipv4["Routes"]
        else {
            Issue.record("the second lease's answer has no IPv4 routes")
            return
        }
        // The new route, then the host route a split tunnel gets to its DNS server (10.90.0.1).
        #expect(routes.first == .dictionary(["Address": .string("198.18.0.0"), "Netmask": .string("255.254.0.0")]))
        #expect(routes.dropFirst().allSatisfy { $0.dictionaryValue?["Netmask"] == .string("255.255.255.255") }, "\(routes)")
        await peer.close()
        await second.close()
        await fixture.stop()
    }
}
