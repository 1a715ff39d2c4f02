import Foundation
import Testing
@testable import SimpleTunnelServices

/// `tunnel-server profile` writes what `tunnel-client --profile` reads; the
/// command line still wins over the profile.
@Suite("Client profiles", .timeLimit(.minutes(2)))
struct ClientProfileTests {
    @Test func theProfilesOptionsComeFirstSoTheCommandLinesWin() throws {
        let folder = NSTemporaryDirectory() + "profile-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = ClientProfile(server: "vpn.example.com:4433", pinSHA256: ["ab12"], user: "alice", dns: "auto")
        try profile.encoded().write(toFile: folder + "/p.json", atomically: true, encoding: .utf8)
        #expect(try ClientProfile.expanding(["ip", "--profile", folder + "/p.json", "--user", "bob"]) == [
            "ip", "--server", "vpn.example.com:4433", "--pin-sha256", "ab12", "--user", "alice", "--dns", "auto", "--user", "bob",
        ])
        #expect(try ClientProfile.expanding(["socks", "--profile=\(folder)/p.json"])?.contains("--dns") == false, "only ip takes --dns")
        #expect(try ClientProfile.expanding(["socks"]) == nil)

        // A password, or any other key it does not know, is refused rather than ignored.
        try #"{"server": "a:1", "pinSHA256": [], "password": "hunter2"}"#.write(toFile: folder + "/bad.json", atomically: true, encoding: .utf8)
        #expect(throws: ClientProfileError.self) { try ClientProfile.expanding(["ip", "--profile", folder + "/bad.json"]) }
    }

    @Test func aProfileWrittenForALoginConnectsWithNothingElseButThePassword() async throws {
        let folder = NSTemporaryDirectory() + "profile-run-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try OperatedServer.write(["alice": "wonderland"], to: folder + "/users")
        let common = ["--users", folder + "/users", "--state-directory", folder + "/state"]
        let server = try ExternalProcess([BuiltPrograms.tunnelServer, "serve", "--port", "0", "--control", folder + "/server.sock"] + common)
        defer { server.terminate() }
        let started = try #require(await server.waitForOutput(containing: "connect with:", timeout: 30))
        let port = try #require(started.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        let pin = try #require(started.firstMatch(of: /SHA-256 ([0-9a-f]{64})/).map { String($0.1) })

        let written = try await ExternalProcess.run(
            BuiltPrograms.tunnelServer, ["profile", "alice", "--server", "127.0.0.1:\(port)", "--output", folder + "/alice.json"] + common)
        #expect(written.status == 0, "\(String(decoding: written.output + written.errors, as: UTF8.self))")
        let text = try String(contentsOfFile: folder + "/alice.json", encoding: .utf8)
        #expect(text.contains(pin) && text.contains("\"user\" : \"alice\"") && !text.contains("wonderland"), "\(text)")

        let fetched = try await ExternalProcess.run(
            BuiltPrograms.tunnelClient, ["config", "--profile", folder + "/alice.json", "--control", folder + "/client.sock"],
            environment: ["SIMPLETUNNEL_PASSWORD": "wonderland", "PATH": "/usr/bin:/bin"], timeout: 30)
        #expect(fetched.status == 0, "\(String(decoding: fetched.output + fetched.errors, as: UTF8.self))")
        #expect(String(decoding: fetched.output, as: UTF8.self).contains("{"))

        // A login the users file does not have gets no profile.
        let unknown = try await ExternalProcess.run(
            BuiltPrograms.tunnelServer, ["profile", "mallory", "--server", "127.0.0.1:\(port)"] + common)
        #expect(unknown.status == 1)
        #expect(String(decoding: unknown.errors, as: UTF8.self).contains("has no login \"mallory\""))
    }
}
