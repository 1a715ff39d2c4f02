import Foundation
import Testing
@testable import SimpleTunnelServices

/// `Server.Users.<login>.IPv4Address` with the built programs in network
/// namespaces: the login's tunnel comes up with its fixed address on every
/// connect, across a server restart (leases in `leases.json`) and with
/// `--database`; another login never gets it; a reload that moves it ends
/// the login's tunnel and its client comes back with the new one. Its
/// group's routes reach its client; another login's client gets the server's.
@Suite("Fixed addresses on a running tunnel-server", .serialized, .timeLimit(.minutes(5)))
struct FixedAddressNamespaceTests {
    static let passwords = ["build": "build-pw", "alice": "alice-pw"]

    /// Build is in a group whose routes add 10.20.0.0/16 to the destination's network; alice is in none.
    static func users(build address: String) -> String {
        let route = { (network: String, mask: String) in "<dict><key>Address</key><string>\(network)</string><key>Netmask</key><string>\(mask)</string></dict>" }
        return "<key>Groups</key><dict><key>builders</key><dict><key>Routes</key><dict><key>IPv4</key><array>"
            + route("198.18.2.0", "255.255.255.0") + route("10.20.0.0", "255.255.0.0") + "</array></dict></dict></dict>"
            + "<key>Users</key><dict><key>build</key><dict><key>Groups</key><array><string>builders</string></array>"
            + "<key>IPv4Address</key><string>\(address)</string></dict></dict>"
    }

    static func lab() throws -> VPNLab {
        let vpn = try VPNLab()
        vpn.poolEnd = "10.90.0.20"
        vpn.serverKeys = users(build: "10.90.0.9")
        return vpn
    }

    static func connect(_ login: String, _ vpn: VPNLab, index: Int) async throws -> (ExternalProcess, String) {
        let client = try vpn.clientNamespace(index)
        let process = try await start(login, vpn, in: client, index: index)
        return (process, client)
    }

    static func start(
        _ login: String, _ vpn: VPNLab, in namespace: String, index: Int, passwords: [String: String] = passwords
    ) async throws -> ExternalProcess {
        try await vpn.startClient(
            in: namespace, serverAddress: "198.18.\(10 + index).1", device: "stun\(index)",
            arguments: ["--user", login, "--password-file", DatabaseReloadNamespaceTests.passwordFile(vpn, login, passwords[login] ?? "")])
    }

    static func address(_ vpn: VPNLab, in namespace: String, device: String) throws -> String {
        try vpn.lab.run(in: namespace, ["ip", "-4", "addr", "show", "dev", device]).standardOutput
    }

    static func stop(_ processes: [ExternalProcess]) async {
        for process in processes { process.terminate() }
        for process in processes { _ = await process.finish(timeout: 20) }
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func theFixedAddressHoldsAcrossReconnectsARestartAndMovesOnReload() async throws {
        let vpn = try Self.lab()
        defer { vpn.cleanup() }
        let usersPath = vpn.directory + "/users"
        try OperatedServer.write(Self.passwords, to: usersPath)
        let arguments = ["--users", usersPath]
        try await vpn.startServer(arguments: arguments)
        let server = try #require(vpn.serverProcess)

        // Alice, first in, gets the pool's first address; build gets its own, not the next free one.
        let (alice, aliceNamespace) = try await Self.connect("alice", vpn, index: 2)
        #expect(try Self.address(vpn, in: aliceNamespace, device: "stun2").contains("10.90.0.2/"))
        let (build, buildNamespace) = try await Self.connect("build", vpn, index: 1)
        #expect(try Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.9/"), "\(server.outputSoFar)")
        let ping = try vpn.lab.run(in: buildNamespace, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "no ping from the fixed address: \(ping.standardOutput)\n\(build.outputSoFar)")
        // The builders group's routes reached build's client; alice got the server's.
        let buildRoutes = try vpn.lab.run(in: buildNamespace, ["ip", "route"]).standardOutput
        let aliceRoutes = try vpn.lab.run(in: aliceNamespace, ["ip", "route"]).standardOutput
        #expect(buildRoutes.contains("10.20.0.0/16 dev stun1") && buildRoutes.contains("198.18.2.0/24 dev stun1"), "\(buildRoutes)")
        #expect(!aliceRoutes.contains("10.20.0.0/16") && aliceRoutes.contains("198.18.2.0/24 dev stun2"), "\(aliceRoutes)")

        // Reconnect, then restart the server: the same address each time.
        await Self.stop([build])
        let again = try await Self.start("build", vpn, in: buildNamespace, index: 1)
        #expect(try Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.9/"))
        await Self.stop([again, alice])
        await vpn.stopServer()
        let leases = try String(contentsOfFile: vpn.directory + "/server-state/leases.json", encoding: .utf8)
        #expect(leases.contains(#""login:build" : "10.90.0.9""#), "\(leases)")
        try await vpn.startServer(arguments: arguments)
        let restarted = try #require(vpn.serverProcess)
        let afterRestart = try await Self.start("build", vpn, in: buildNamespace, index: 1)
        #expect(try Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.9/"))

        // A reload moves it: the log says so, build's tunnel ends, and its client comes back on the new address.
        vpn.serverKeys = Self.users(build: "10.90.0.10")
        try vpn.writeServerConfiguration()
        try await IPLayerReloadNamespaceTests.hangUp(restarted)
        let reloaded = restarted.outputSoFar
        #expect(reloaded.contains(#"login "build": fixed address 10.90.0.9 → 10.90.0.10"#), "\(reloaded)")
        #expect(await restarted.waitForOutput(containing: #"logins="build" tunnels-ended=1"#) != nil, "\(restarted.outputSoFar)")
        let moved = await Loopback.waitUntil(seconds: 30) {
            (try? Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.10/")) == true
        }
        #expect(moved, "the client did not come back on its new address:\n\(afterRestart.outputSoFar)\nserver:\n\(restarted.outputSoFar)")

        // A duplicate refuses the reload, naming the file, the key and both logins; the old settings stay.
        vpn.serverKeys = "<key>Users</key><dict><key>alice</key><dict><key>IPv4Address</key><string>10.90.0.10</string></dict>"
            + "<key>build</key><dict><key>IPv4Address</key><string>10.90.0.10</string></dict></dict>"
        let path = try vpn.writeServerConfiguration()
        kill(restarted.processIdentifier, SIGHUP)
        let refused = try #require(await restarted.waitForOutput(containing: "configuration not reloaded"))
        #expect(refused.contains(path) && refused.contains("Server.Users.build.IPv4Address") && refused.contains(#""alice" and "build""#), "\(refused)")
        await Self.stop([afterRestart])
    }

    /// At start, no namespace needed: the server refuses the file before it listens, naming the file, the key and the logins.
    @Test(arguments: [
        (#"<key>build</key><dict><key>IPv4Address</key><string>10.90.1.9</string></dict>"#,
         ["Server.Users.build.IPv4Address", "10.90.1.9 of login \"build\" is outside the IPv4 pool 10.90.0.2-10.90.0.20"]),
        (#"<key>alice</key><dict><key>IPv4Address</key><string>10.90.0.9</string></dict><key>build</key><dict><key>IPv4Address</key><string>10.90.0.9</string></dict>"#,
         ["Server.Users.build.IPv4Address", #"10.90.0.9 is the fixed address of both "alice" and "build""#]),
    ])
    func aBadFixedAddressStopsTheServerAtStart(users: String, expected: [String]) async throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("tunnel-server.plist", text: """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
              <key>IPv4</key><dict><key>Pool</key><dict><key>StartAddress</key><string>10.90.0.2</string><key>EndAddress</key><string>10.90.0.20</string></dict></dict>
              <key>DNS</key><dict><key>Servers</key><array/></dict>
              <key>Server</key><dict><key>Users</key><dict>\(users)</dict></dict>
            </dict></plist>
            """)
        let run = try await ExternalProcess.run(
            BuiltPrograms.tunnelServer,
            ["serve", "--port", "0", "--plaintext", "--host", "127.0.0.1", "--config", path, "--no-ip-layer", "--state-directory", directory.path + "/state"],
            timeout: 30)
        let said = String(decoding: run.output + run.errors, as: UTF8.self)
        #expect(run.status != 0, "\(said)")
        for text in [path] + expected {
            #expect(said.contains(text), "\(said)")
        }
    }

    @Test(.enabled(if: DatabaseReloadNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and postgresql"))
    func withTheDatabaseTheFixedAddressHoldsAcrossARestart() async throws {
        let postgres = try await ThrowawayPostgres.started()
        defer { postgres.remove() }
        let vpn = try Self.lab()
        defer { vpn.cleanup() }
        for (login, password) in Self.passwords {
            try await DatabaseReloadNamespaceTests.addLogin(login, password: password, to: postgres)
        }
        let arguments = ["--database", postgres.socketURL]
        try await vpn.startServer(arguments: arguments)
        let (alice, aliceNamespace) = try await Self.connect("alice", vpn, index: 2)
        #expect(try Self.address(vpn, in: aliceNamespace, device: "stun2").contains("10.90.0.2/"))
        let (build, buildNamespace) = try await Self.connect("build", vpn, index: 1)
        #expect(try Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.9/"))
        await Self.stop([build, alice])
        await vpn.stopServer()
        // Leases live in the database now; a restart with an empty state folder still gives build its address.
        try? FileManager.default.removeItem(atPath: vpn.directory + "/server-state")
        try await vpn.startServer(arguments: arguments)
        let again = try await Self.start("build", vpn, in: buildNamespace, index: 1)
        #expect(try Self.address(vpn, in: buildNamespace, device: "stun1").contains("10.90.0.9/"))
        await Self.stop([again])
    }
}
