import Foundation
import Testing
@testable import SimpleTunnelServices

/// In the operator's order, with the built programs: a server sharing a
/// throwaway PostgreSQL starts, is reloaded (SIGHUP, then `tunnel-server
/// reload`), and after each reload a new client logs in with a login the
/// database holds, gets a lease and pings through. The database the server
/// opened at start is the one it keeps: it still hears of logins removed.
@Suite("A reloaded server keeps its database", .serialized, .timeLimit(.minutes(4)))
struct DatabaseReloadNamespaceTests {
    static var isAvailable: Bool {
        NetworkNamespaceLab.isAvailable && TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)
    }

    /// `tunnel-server passwd LOGIN --database`, run off the concurrency pool (a password hash takes a while).
    static func addLogin(_ login: String, password: String, to postgres: ThrowawayPostgres) async throws {
        _ = try await ThrowawayPostgres.offThePool {
            try ThrowawayPostgres.run(
                ["sh", "-c", "printf '%s\\n' \"$0\" | \"$1\" passwd \"$2\" --database \"$3\"", password, BuiltPrograms.tunnelServer, login, postgres.socketURL],
                as: nil)
        }
    }

    static func passwordFile(_ vpn: VPNLab, _ login: String, _ password: String) -> String {
        let path = vpn.directory + "/password-\(login)"
        _ = FileManager.default.createFile(atPath: path, contents: Data("\(password)\n".utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    @Test(.enabled(if: isAvailable, "needs root, /dev/net/tun, ip netns and postgresql"))
    func aNewDatabaseLoginGetsALeaseAndPingsAfterEachReload() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await Self.addLogin("alice", password: "correct horse", to: postgres)
        try await Self.addLogin("bob", password: "battery staple", to: postgres)
        let control = vpn.directory + "/server.sock"
        try await vpn.startServer(arguments: ["--database", postgres.socketURL, "--control", control])
        let server = try #require(vpn.serverProcess)
        #expect(server.outputSoFar.contains("sharing logins, leases and sessions in"), "\(server.outputSoFar)")

        // SIGHUP with an unchanged file, as `systemctl reload` sends it.
        try await IPLayerReloadNamespaceTests.hangUp(server)
        let first = try vpn.clientNamespace(1)
        let alice = try await vpn.startClient(
            in: first, serverAddress: "198.18.11.1", device: "stun1",
            arguments: ["--user", "alice", "--password-file", Self.passwordFile(vpn, "alice", "correct horse")])
        let ping = try vpn.lab.run(in: first, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "no ping after a SIGHUP: \(ping.standardOutput)\n\(alice.outputSoFar)\nserver:\n\(server.outputSoFar)")
        let aliceAddresses = try vpn.lab.run(in: first, ["ip", "-4", "addr", "show", "dev", "stun1"]).standardOutput
        #expect(aliceAddresses.contains("10.90.0.2"), "\(aliceAddresses)")

        // A reload asked for through the control socket: the next login is checked against the same database.
        let reload = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["reload", "--control", control], timeout: 30)
        let answer = String(decoding: reload.output + reload.errors, as: UTF8.self)
        #expect(reload.status == 0, "\(answer)")
        let second = try vpn.clientNamespace(2)
        let bob = try await vpn.startClient(
            in: second, serverAddress: "198.18.12.1", device: "stun2",
            arguments: ["--user", "bob", "--password-file", Self.passwordFile(vpn, "bob", "battery staple")])
        let again = try vpn.lab.run(in: second, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(again.status == 0, "no ping after a control-socket reload: \(again.standardOutput)\n\(bob.outputSoFar)\nserver:\n\(server.outputSoFar)")
        let bobAddresses = try vpn.lab.run(in: second, ["ip", "-4", "addr", "show", "dev", "stun2"]).standardOutput
        #expect(bobAddresses.contains("10.90.0.3"), "the database's lease table gave bob the next address: \(bobAddresses)")

        // The database opened at start still listens: bob removed from it ends bob's tunnel on this server.
        _ = try await ThrowawayPostgres.offThePool {
            try ThrowawayPostgres.run([BuiltPrograms.tunnelServer, "passwd", "bob", "--remove", "--database", postgres.socketURL], as: nil)
        }
        let ended = await server.waitForOutput(containing: #"login="bob" tunnels-ended=1"#, timeout: 10)
        #expect(ended != nil, "the reloaded server did not hear of bob's removal:\n\(server.outputSoFar)")
        // One database for the server's whole life: opened once, and never said to be away.
        #expect(server.outputSoFar.components(separatedBy: "sharing logins, leases and sessions in").count == 2, "\(server.outputSoFar)")
        #expect(!server.outputSoFar.contains("database outage"), "\(server.outputSoFar)")
        alice.terminate()
        bob.terminate()
        _ = await alice.finish(timeout: 20)
        _ = await bob.finish(timeout: 20)
    }
}
