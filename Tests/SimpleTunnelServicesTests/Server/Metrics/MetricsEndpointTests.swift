import Foundation
import NIOCore
import NIOPosix
import Prometheus
import Testing
@testable import SimpleTunnelServices

@Suite("Metrics endpoint", .timeLimit(.minutes(2)))
struct MetricsEndpointTests {
    static func scrape(_ url: String) async throws -> (status: Int32, body: String) {
        let curl = try ExternalProcess(["curl", "-s", "--max-time", "10", "-w", "\n%{http_code}", url])
        let result = await curl.finish()
        return (result.status, result.output)
    }

    static func value(_ metric: String, in body: String) -> Double? {
        body.split(separator: "\n").first { $0.hasPrefix(metric + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func countersMoveAsTunnelsFlowsAndLoginsHappen() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let fixture = try await TunnelFixture.start { $0.metrics = metrics }
        let endpoint = try await MetricsEndpoint.start(host: "127.0.0.1", port: 0, registry: registry, group: fixture.group, logger: TunnelFixture.logger)
        let url = "http://127.0.0.1:\(endpoint.localAddress.port ?? 0)/metrics"

        let before = try await Self.scrape(url)
        #expect(before.body.hasSuffix("200"))
        #expect(Self.value("simpletunnel_tunnels_total", in: before.body) == 1)

        let forwarder = try await fixture.forward()
        let payload = LoopbackPeers.payload(100_000)
        #expect(try await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group) == payload)

        let after = try await Self.scrape(url)
        #expect(Self.value("simpletunnel_open_results_total{result=\"success\"}", in: after.body) == 1)
        #expect((Self.value("simpletunnel_bytes_total{direction=\"from_clients\"}", in: after.body) ?? 0) >= 100_000)
        #expect((Self.value("simpletunnel_bytes_total{direction=\"to_clients\"}", in: after.body) ?? 0) >= 100_000)
        #expect(after.body.contains("simpletunnel_tunnels"), "\(after.body)")

        let missing = try await Self.scrape("http://127.0.0.1:\(endpoint.localAddress.port ?? 0)/nothing")
        #expect(missing.body.hasSuffix("404"))
        await endpoint.close()
        await fixture.stop()
    }

    @Test func theBuildTheProcessAndLoginsByOutcomeAreScraped() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = TunnelServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "wonderland", iterations: PasswordHash.minimumIterations))
        let identity = try SelfSignedIdentity.loadOrCreate(directory: NSTemporaryDirectory() + "metrics-\(UUID().uuidString)")
        let tls = try TLSContext(configuration: identity.serverConfiguration())
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: database, limiter: LoginRateLimiter(maximumFailures: 1))
            settings.tls = tls
            settings.metrics = metrics
        }
        let endpoint = try await MetricsEndpoint.start(host: "127.0.0.1", port: 0, registry: registry, group: fixture.group, logger: TunnelFixture.logger)
        let url = "http://127.0.0.1:\(endpoint.localAddress.port ?? 0)/metrics"

        let tunnel = try await AuthenticationTests.connect(fixture, identity, login: "alice", password: "wonderland")
        await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await AuthenticationTests.connect(fixture, identity, login: "alice", password: "looking glass")
        }
        // One failure is the limit here: the next attempt from loopback is refused unchecked.
        await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await AuthenticationTests.connect(fixture, identity, login: "alice", password: "wonderland")
        }

        let body = try await Self.scrape(url).body
        #expect(Self.value("simpletunnel_build_info{version=\"\(SimpleTunnelVersion.current)\"}", in: body) == 1, "\(body)")
        #expect(Self.value("simpletunnel_logins_total{outcome=\"success\"}", in: body) == 1)
        #expect(Self.value("simpletunnel_logins_total{outcome=\"failure\"}", in: body) == 1)
        #expect(Self.value("simpletunnel_logins_total{outcome=\"rate_limited\"}", in: body) == 1)
        #expect(Self.value("simpletunnel_logins_total{outcome=\"unchecked\"}", in: body) == 0)
        // The process's figures as /proc has them: at least the listeners and the tunnel are open.
        let resident = try #require(Self.value("process_resident_memory_bytes", in: body))
        let descriptors = try #require(Self.value("process_open_fds", in: body))
        #expect(resident > 1_000_000 && descriptors >= 3, "\(resident) \(descriptors)")
        // Other tests open and close descriptors meanwhile: the scrape must be this process's count, not an exact one.
        let now = try #require(ProcessFigures.current())
        #expect(descriptors <= Double(now.openDescriptors) * 4 + 64 && Double(now.openDescriptors) <= descriptors * 4 + 64, "\(descriptors) \(now.openDescriptors)")

        await tunnel.close()
        await endpoint.close()
        await fixture.stop()
    }

    @Test func residentPagesAreStatmsSecondField() {
        #expect(ProcessFigures.residentPages(statm: "12345 678 90 1 0 2 0\n") == 678)
        #expect(ProcessFigures.residentPages(statm: "") == nil)
    }
}
