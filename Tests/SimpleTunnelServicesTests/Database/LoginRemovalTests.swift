import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// A login removed from the shared database ends its tunnels on every server,
/// the built tunnel-server's, and only on the database's word.
@Suite("Several servers: a login removed from the database", .timeLimit(.minutes(3)))
struct LoginRemovalTests {
    let directory = NSTemporaryDirectory() + "login-removal-\(UUID().uuidString.prefix(8))"

    /// `tunnel-server passwd … --database`, awaited without holding one of Swift's few cooperative threads.
    struct PasswdFailed: Error, CustomStringConvertible {
        let description: String
    }

    func passwd(_ arguments: [String], password: String = "", postgres: ThrowawayPostgres) async throws -> String {
        let process = try ExternalProcess(
            [BuiltPrograms.tunnelServer, "passwd"] + arguments + ["--database", postgres.socketURL], standardInput: .text(password + "\n"))
        let result = await process.finish(timeout: 60)
        guard result.status == 0 else { throw PasswdFailed(description: "passwd \(arguments) exited \(result.status): \(result.output)") }
        return result.output
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)), .timeLimit(.minutes(3)))
    func everyServerEndsTheRemovedLoginsTunnelsAndAForgedNoticeEndsNone() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try await passwd(["alice"], password: "wonderland", postgres: postgres)
        _ = try await passwd(["bob", "--allow-short"], password: "builder", postgres: postgres)

        var servers: [(process: ExternalProcess, port: Int, identity: SelfSignedIdentity)] = []
        defer { servers.forEach { $0.process.terminate() } }
        for index in 0..<2 {
            let state = directory + "/state-\(index)"
            let identity = try SelfSignedIdentity.loadOrCreate(directory: state)
            let process = try ExternalProcess([
                BuiltPrograms.tunnelServer, "serve", "--port", "0", "--database", postgres.socketURL, "--no-ip-layer",
                "--state-directory", state, "--control", directory + "/server-\(index).sock", "--log-level", "debug",
            ])
            servers.append((process, 0, identity))
            #expect(await process.waitForOutput(containing: "listening for logins removed", timeout: 30) != nil, "\(process.outputSoFar)")
            let listening = try #require(await process.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30))
            servers[index].port = try #require(listening.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        }
        let group = MultiThreadedEventLoopGroup.singleton
        func connect(_ server: Int, _ login: String, _ password: String) async throws -> TunnelClientConnection {
            var settings = TunnelClientConnection.Settings(
                host: "127.0.0.1", port: servers[server].port,
                tls: try TLSContext(configuration: .client(trust: .pinnedSHA256([servers[server].identity.sha256Fingerprint]))))
            settings.credentials = (login, password)
            return try await TunnelClientConnection.connect(settings: settings, group: group, logger: TunnelFixture.logger)
        }
        let alice = try await connect(0, "alice", "wonderland")
        let bobOnA = try await connect(0, "bob", "builder")
        let bobOnB = try await connect(1, "bob", "builder")

        // Anyone who can connect may NOTIFY: a notice naming alice, who is still in the table, ends nothing.
        let database = TunnelDatabase(location: try postgres.location, password: nil, logger: TunnelFixture.logger)
        let run = Task { await database.run() }
        defer { run.cancel() }
        try await database.perform("forging a notice") { client, logger in
            try await client.query("SELECT pg_notify('simpletunnel_logins', 'alice')", logger: logger)
        }

        let removed = try await passwd(["bob", "--remove"], postgres: postgres)
        #expect(removed.contains("bob removed from the database"), "\(removed)")
        #expect(await Loopback.waitUntil(seconds: 5) { !bobOnA.channel.isActive && !bobOnB.channel.isActive })
        for server in servers {
            let line = await server.process.waitForOutput(containing: "login removed from the database")
            #expect(line?.contains(#"login="bob" tunnels-ended=1"#) == true, "\(server.process.outputSoFar)")
        }
        #expect(alice.channel.isActive, "a forged notice ends no tunnel")
        #expect(!servers[0].process.outputSoFar.contains(#"login="alice" tunnels-ended"#))
        await #expect(throws: TunnelLoginRefusedError.self) { _ = try await connect(1, "bob", "builder") }

        let listed = try await passwd(["--list"], postgres: postgres).split(separator: "\n")
        #expect(listed.contains("alice") && !listed.contains("bob"), "\(listed)")
        await #expect(throws: PasswdFailed.self) { _ = try await passwd(["bob", "--remove"], postgres: postgres) }
        await alice.close()
    }
}
