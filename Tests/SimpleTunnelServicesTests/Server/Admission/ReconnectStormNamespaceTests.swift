import Foundation
import Testing
@testable import SimpleTunnelServices

/// Every client coming back at once after the server is SIGKILLed and started
/// again: `Benchmarks/faults_helper.py storm` holds the tunnels (each proven
/// by an echo through a TCP flow) and brings each back with the client's
/// jittered backoff, while a probe in a process of its own opens a tunnel and
/// echoes every 100 ms. `Benchmarks/faults.sh` runs the same at 3,000.
@Suite("Reconnect storm on the built server: all back within 30 s, a probe answered meanwhile", .timeLimit(.minutes(4)))
struct ReconnectStormNamespaceTests {
    static let helper = RepositoryPaths.root.appendingPathComponent("Benchmarks/faults_helper.py").path
    static let tunnels = 400

    struct Storm: Decodable {
        var tunnels: Int
        var back: Int
        var allBackSeconds: Double?
        var backPerSecond: [Int]
        var probes: Int
        var probeFailures: Int
        var probeP99: Double?

        enum CodingKeys: String, CodingKey {
            case tunnels, back, probes
            case allBackSeconds = "all-back-seconds"
            case backPerSecond = "back-per-second"
            case probeFailures = "probe-failures"
            case probeP99 = "probe-p99"
        }
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, ip netns and python3"))
    func killedAndStartedAgainEveryTunnelIsBackWithin30sAndAProbeIsAnswered() async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let namespace = try lab.makeNamespace()
        let folder = NSTemporaryDirectory() + "storm-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = [
            BuiltPrograms.tunnelServer, "serve", "--host", "127.0.0.1", "--port", "4433", "--no-ip-layer", "--log-level", "notice",
            "--state-directory", folder + "/state", "--control", folder + "/server.sock", "--max-tunnels", "\(Self.tunnels + 100)",
        ]
        func start() async throws -> ExternalProcess {
            let process = try lab.start(in: namespace, server)
            let listening = await process.waitForOutput(containing: "listening on 127.0.0.1:4433", timeout: 30)
            try #require(listening != nil, "the server did not start:\n\(process.outputSoFar)")
            return process
        }
        let first = try await start()
        let lost = folder + "/lost"
        let storm = try lab.start(in: namespace, [
            "python3", Self.helper, "storm", "--port", "4433", "--tunnels", "\(Self.tunnels)", "--limit", "90", "--lost-file", lost,
        ])
        defer { storm.terminate() }
        let up = await storm.waitForOutput(containing: "up \(Self.tunnels)", timeout: 150)
        try #require(up != nil, "the tunnels did not all come up:\n\(storm.outputSoFar)")

        first.terminate()  // SIGKILL: no goodbye to any client
        _ = await Loopback.waitUntil(seconds: 10) { !first.isRunning }
        FileManager.default.createFile(atPath: lost, contents: nil)
        let restarted = try await start()
        defer { restarted.terminate() }

        let (status, output) = await storm.finish(timeout: 150)
        try #require(status == 0, "\(output)")
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "\(output)")
        let result = try JSONDecoder().decode(Storm.self, from: Data(line.utf8))
        print("storm: \(result.back) of \(result.tunnels) back after \(result.allBackSeconds.map { "\($0)" } ?? "-") s, per second \(result.backPerSecond); probe p99 \(result.probeP99.map { "\($0)" } ?? "-") s over \(result.probes), \(result.probeFailures) dropped or failed")
        #expect(result.back == Self.tunnels, "\(line)")
        #expect((result.allBackSeconds ?? .infinity) < 30, "\(line)")
        #expect(result.probes > 0, "\(line)")
        // The debug build beside a parallel test run: a probe queues behind a few hundred handshakes, so the
        // bound here is 2 s; `Benchmarks/faults.sh` measures the release build against the 1 s target.
        #expect((result.probeP99 ?? .infinity) < 2, "\(line)")
        #expect(restarted.isRunning, "\(restarted.outputSoFar)")
    }
}
