import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Each login's usage on the built tunnel-server, as an operator reads it:
/// `tunnel-server usage` after downloads through `forward`, and again after a restart.
@Suite("Usage per login on a running tunnel-server", .timeLimit(.minutes(3)))
struct UsageProcessTests {
    let directory = NSTemporaryDirectory() + "usage-\(UUID().uuidString.prefix(8))"

    func startServer(_ extra: [String] = []) async throws -> (ExternalProcess, Int) {
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--plaintext", "--users", directory + "/users", "--no-ip-layer",
            "--control", directory + "/server.sock", "--state-directory", directory + "/state",
        ] + extra)
        guard let started = await server.waitForOutput(containing: "control socket at", timeout: 30),
            let port = started.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap({ Int($0.1) })
        else {
            server.terminate()
            throw BandwidthProcessTests.ForwardNotUp(output: server.outputSoFar)
        }
        return (server, port)
    }

    func usage(_ arguments: String...) async throws -> String {
        let run = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["usage", "--control", directory + "/server.sock"] + arguments, timeout: 30)
        #expect(run.status == 0, "\(String(decoding: run.errors, as: UTF8.self))")
        return String(decoding: run.output, as: UTF8.self)
    }

    func download(as login: String, port: Int, destination: Int) async throws -> Int {
        let (client, local) = try await BandwidthProcessTests.forward(as: login, server: port, destination: destination, directory: directory)
        defer { client.terminate() }
        return try await Download.run(port: local, group: MultiThreadedEventLoopGroup.singleton).bytes
    }

    @Test func usageIsCountedPerLoginListedAndSurvivesARestart() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let group = MultiThreadedEventLoopGroup.singleton
        let source = try await DestinationServers.source(count: 1_000_000, group: group)
        defer { source.close(promise: nil) }
        let sourcePort = try #require(source.localAddress?.port)
        try OperatedServer.write(["alice": "alice-password", "bob": "bob-password"], to: directory + "/users")
        let before = Date(timeIntervalSinceNow: -1)

        var (server, port) = try await startServer()
        #expect(try await download(as: "alice", port: port, destination: sourcePort) == 1_000_000)
        #expect(try await download(as: "bob", port: port, destination: sourcePort) == 1_000_000)
        #expect(try await download(as: "bob", port: port, destination: sourcePort) == 1_000_000)

        let report = try JSONDecoder().decode(LoginUsageReport.self, from: Data(try await usage("--json").utf8))
        #expect(report.logins.map(\.login) == ["alice", "bob"])
        let alice = try #require(report.logins.first), bob = try #require(report.logins.last)
        #expect(alice.bytesToClient == 1_000_000 && bob.bytesToClient == 2_000_000, "\(report)")
        #expect(alice.bytesFromClient == 0 && bob.bytesFromClient == 0, "\(report)")
        let seen = try #require(try? Date(alice.lastSeen, strategy: .iso8601))
        #expect(seen >= before.addingTimeInterval(-1) && seen <= Date().addingTimeInterval(1), "\(alice.lastSeen)")
        // The JSON's shape, key by key.
        let raw = try #require(try JSONSerialization.jsonObject(with: Data(try await usage("--json").utf8)) as? [String: Any])
        let first = try #require((raw["logins"] as? [[String: Any]])?.first)
        #expect(Set(first.keys) == ["login", "bytesFromClient", "bytesToClient", "lastSeen"])
        #expect(raw["keptIn"] as? String == directory + "/state/usage.json")
        // The text: where it is kept, a header, then a line per login.
        let text = try await usage()
        let lines = text.split(separator: "\n")
        #expect(lines.first == "usage since counting began, in \(directory)/state/usage.json", "\(text)")
        #expect(lines.dropFirst().first?.split(separator: " ", omittingEmptySubsequences: true) == ["LOGIN", "FROM", "CLIENT", "TO", "CLIENT", "LAST", "SEEN"], "\(text)")
        #expect(lines.contains { $0.hasPrefix("\"bob\"") && $0.contains("2000000 B (1.9 MiB)") }, "\(text)")
        // Counted per day: since today, the same; since tomorrow, nobody.
        let today = UsageDay(Date()).text
        let sinceToday = try JSONDecoder().decode(LoginUsageReport.self, from: Data(try await usage("--json", "--since", today).utf8))
        #expect(sinceToday.logins.map(\.bytesToClient) == [1_000_000, 2_000_000] && sinceToday.since == today, "\(sinceToday)")
        let tomorrow = UsageDay(Date(timeIntervalSinceNow: 86_400)).text
        #expect(try await usage("--since", tomorrow).hasPrefix("no usage since \(tomorrow) (UTC)"))

        // Stopped (it writes the file) and started again: the counts carry on.
        kill(server.processIdentifier, SIGTERM)
        #expect(await server.finish(timeout: 20).status == 0)
        #expect(FileManager.default.fileExists(atPath: directory + "/state/usage.json"))
        (server, port) = try await startServer()
        defer { server.terminate() }
        #expect(try await download(as: "alice", port: port, destination: sourcePort) == 1_000_000)
        let after = try JSONDecoder().decode(LoginUsageReport.self, from: Data(try await usage("--json").utf8))
        #expect(after.logins.map(\.bytesToClient) == [2_000_000, 2_000_000], "\(after)")
    }

    @Test func aBadSinceIsRefused() async throws {
        let run = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["usage", "--since", "yesterday", "--control", directory + "/none.sock"], timeout: 30)
        #expect(run.status != 0)
        #expect(String(decoding: run.errors, as: UTF8.self).contains("--since yesterday: give a day as YYYY-MM-DD (UTC)"), "\(String(decoding: run.errors, as: UTF8.self))")
    }

    /// Usage by login in the metrics only when asked for: one series per login.
    @Test func metricsCountBytesByLoginOnlyWithMetricsPerLogin() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let group = MultiThreadedEventLoopGroup.singleton
        let source = try await DestinationServers.source(count: 300_000, group: group)
        defer { source.close(promise: nil) }
        let sourcePort = try #require(source.localAddress?.port)
        try OperatedServer.write(["alice": "alice-password"], to: directory + "/users")
        for perLogin in [true, false] {
            let metricsPort = try CertificateExpiryTests.freeLoopbackPort()
            let (server, port) = try await startServer(["--metrics", "127.0.0.1:\(metricsPort)"] + (perLogin ? ["--metrics-per-login"] : []))
            defer { server.terminate() }
            #expect(try await download(as: "alice", port: port, destination: sourcePort) == 300_000)
            _ = try await usage()  // hands the counts over, as the periodic flush does
            let scrape = try await ExternalProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(metricsPort)/metrics"], timeout: 30)
            let series = String(decoding: scrape.output, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("simpletunnel_login_bytes_total{") }
            if perLogin {
                #expect(series.contains { $0.contains(#"login="alice""#) && $0.contains(#"direction="to_client""#) && $0.hasSuffix(" 300000") }, "\(series)")
            } else {
                #expect(series.isEmpty, "\(series)")
            }
            kill(server.processIdentifier, SIGTERM)
            _ = await server.finish(timeout: 20)
        }
        let refused = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["serve", "--metrics-per-login", "--no-ip-layer"], timeout: 30)
        #expect(refused.status != 0)
        #expect(String(decoding: refused.errors, as: UTF8.self).contains("--metrics-per-login adds to the metrics: give --metrics ADDR:PORT too"))
    }
}
