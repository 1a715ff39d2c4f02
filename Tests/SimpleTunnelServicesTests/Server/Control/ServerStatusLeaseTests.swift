import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("Server status: leases and anonymous tunnels", .timeLimit(.minutes(2)))
struct ServerStatusLeaseTests {
    @Test(.timeLimit(.minutes(3)))
    func anIPTunnelShowsItsLeaseAndAnAnonymousPlaintextOneSaysSo() async throws {
        let (fixture, _, _) = try await IPLayerTests.start()
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        guard case .openResult(1, .success, _, _)? = await peer.next() else {
            Issue.record("no successful open result")
            return
        }
        let status = await fixture.server.status()
        let tunnel = try #require(status.tunnels.first)
        #expect(status.tunnels.count == 1 && status.totals.openFlows == 1)
        #expect(tunnel.leasedAddress == "10.90.0.2" && tunnel.login == nil && tunnel.certificateSubject == nil && tunnel.tlsVersion == nil)
        #expect(status.text.contains("anonymous") && status.text.contains("lease 10.90.0.2") && status.text.contains("no TLS"), "\(status.text)")
        try await peer.send(.close(identifier: 1, direction: .all))
        var lease = tunnel.leasedAddress
        for _ in 0..<200 where lease != nil {
            try await Task.sleep(for: .milliseconds(10))
            lease = await fixture.server.status().tunnels.first?.leasedAddress
        }
        #expect(lease == nil, "a closed IP flow gives its address back")
        await peer.close()
        await fixture.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aDualStackTunnelShowsBothAddressesOfItsLease() async throws {
        let pool6 = try #require(IPv6Address("fd00:90::2"))...(try #require(IPv6Address("fd00:90::ff")))
        let (fixture, _, _) = try await IPLayerTests.start(ipv6Pool: pool6)
        let peer = try await fixture.peer()
        try await peer.send(.open(identifier: 1, request: .plainIP))
        guard case .openResult(1, .success, let configuration?, _)? = await peer.next() else {
            Issue.record("no successful open result")
            return
        }
        #expect(configuration["IPv6"]?.dictionaryValue?["Address"] == .string("fd00:90::2"))
        let status = await fixture.server.status()
        #expect(status.tunnels.first?.leasedAddress == "10.90.0.2 and fd00:90::2")
        #expect(status.text.contains("lease 10.90.0.2 and fd00:90::2"), "\(status.text)")
        await peer.close()
        await fixture.stop()
    }
}
