import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// `--plaintext-clients` on real loopback sockets: a listed peer is served, any
/// other is closed at accept with nothing read or answered, counted, and
/// logged at most once per interval with its address.
@Suite("Admission: plaintext clients", .timeLimit(.minutes(2)))
struct PlaintextClientsTests {
    @Test(.timeLimit(.minutes(3)))
    func aListedPeerIsServedAndAnotherIsClosedUnansweredAndCounted() async throws {
        let (metrics, registry) = AdmissionLoopbackTests.metrics()
        let fixture = try await RawServerFixture.start { settings in
            settings.clientNetworks = try? IPNetworkList(parsing: "127.0.0.2/32")
            settings.metrics = metrics
        }
        let listed = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0), from: "127.0.0.2")
        #expect(await listed.next() != nil, "the listed peer got no answer")

        let other = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .fetchConfiguration(identifier: 0), from: "127.0.0.3")
        #expect(await other.waitForClose(), "a peer from an unlisted address was kept")
        #expect(await other.next(timeout: .milliseconds(100)) == nil, "it was answered")
        #expect(AdmissionLoopbackTests.refusals(.unlistedAddress, in: registry) == 1)
        #expect(fixture.server.admission.current.unauthenticated == 0 && fixture.server.admission.current.tunnels == 1)
        await listed.close()
        await fixture.stop()
    }

    @Test func refusalsAreLoggedOncePerIntervalWithTheAddressAndAllCounted() {
        let (logger, lines) = CapturingLogHandler.logger()
        var limits = AdmissionControl.Limits()
        limits.clientNetworks = try? IPNetworkList(parsing: "192.168.1.0/24")
        let admission = ConnectionAdmission(limits: limits, logInterval: .seconds(3600), metrics: nil, logger: logger)
        let stranger = try? SocketAddress(ipAddress: "203.0.113.9", port: 40000)
        for _ in 0..<1000 {
            #expect(admission.accept(from: stranger) == nil)
        }
        #expect(admission.accept(from: try? SocketAddress(ipAddress: "192.168.1.4", port: 40000)) != nil)
        #expect(lines.all.count == 1, "\(lines.all.map(\.message))")
        #expect(lines.all.first?.message.contains("--plaintext-clients") == true)
        #expect(lines.all.first?.metadata["address"] == "203.0.113.9")
        #expect(lines.all.first?.metadata[AdmissionRefusal.unlistedAddress.rawValue] == "1")
    }
}
