import Foundation
import Testing
@testable import SimpleTunnelServices

/// The built tunnel-server, as an operator watches it: while its database is
/// away, `status` says so and `simpletunnel_database_up` is 0; once it is back, neither.
@Suite("A server whose database is away says so in status and the metrics", .timeLimit(.minutes(2)))
struct DatabaseAwayStatusTests {
    static func scrape(_ port: Int) async throws -> Double? {
        let result = try await ExternalProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"], timeout: 30)
        let line = String(decoding: result.output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("simpletunnel_database_up ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    static func status(_ control: String) async throws -> String {
        let result = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["status", "--control", control], timeout: 30)
        return String(decoding: result.output, as: UTF8.self)
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(2)))
    func statusAndMetricsFollowTheDatabaseAwayAndBack() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let directory = NSTemporaryDirectory() + "database-status-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let control = directory + "/server.sock"
        let metricsPort = try ServerSocketProbe().port
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--no-ip-layer", "--database", postgres.socketURL,
            "--metrics", "127.0.0.1:\(metricsPort)", "--control", control, "--state-directory", directory + "/state",
        ])
        defer { server.terminate() }
        #expect(await server.waitForOutput(containing: "control socket at", timeout: 30) != nil, "\(server.outputSoFar)")
        #expect(try await Self.scrape(metricsPort) == 1)
        #expect(!(try await Self.status(control)).contains("warning:"))

        try await postgres.stopServerOffThePool(mode: "fast")
        // Its listeners notice at once, and a probe a second later finds no database.
        var away = false
        for _ in 0..<50 where !away {
            try await Task.sleep(for: .milliseconds(200))
            away = try await Self.scrape(metricsPort) == 0
        }
        #expect(away, "\(server.outputSoFar)")
        let said = try await Self.status(control)
        #expect(said.hasPrefix("warning: the database postgres://postgres@/postgres"), "\(said)")
        #expect(said.contains("cannot be reached") && said.contains("try again later"), "\(said)")

        try await postgres.startServerOffThePool()
        var back = false
        for _ in 0..<50 where !back {
            try await Task.sleep(for: .milliseconds(200))
            back = try await Self.scrape(metricsPort) == 1
        }
        #expect(back, "\(server.outputSoFar)")
        #expect(!(try await Self.status(control)).contains("warning:"))
        #expect(server.outputSoFar.contains("the database answers again"), "\(server.outputSoFar)")
    }
}
