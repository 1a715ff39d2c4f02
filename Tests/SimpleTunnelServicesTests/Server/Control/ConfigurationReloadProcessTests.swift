import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// SIGHUP reads the configuration file again, on the built tunnel-server.
@Suite("A running tunnel-server reloads its configuration", .timeLimit(.minutes(2)))
struct ConfigurationReloadProcessTests {
    let directory = NSTemporaryDirectory() + "reloaded-config-\(UUID().uuidString.prefix(8))"
    var configPath: String { directory + "/tunnel-server.plist" }

    func writeConfiguration(tunnels: Int, deny: [String], listenAddress: String = "127.0.0.1") throws {
        let denied = deny.map { "<string>\($0)</string>" }.joined()
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
            <key>DNS</key><dict><key>Servers</key><array><string>10.90.0.1</string></array></dict>
            <key>Server</key><dict>
            <key>ListenAddress</key><string>\(listenAddress)</string>
            <key>Limits</key><dict><key>Tunnels</key><integer>\(tunnels)</integer></dict>
            <key>Policy</key><dict><key>Deny</key><array>\(denied)</array></dict>
            </dict></dict></plist>
            """
        try Data(plist.utf8).write(to: URL(fileURLWithPath: configPath))
    }

    func open(_ identifier: TunnelConnectionIdentifier, port: Int, on peer: RawTunnelPeer) async throws -> TunnelConnectionOpenResult? {
        try await peer.send(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: port))))
        guard case .openResult(identifier, let result, _, _) = await peer.next() else { return nil }
        return result
    }

    @Test(.timeLimit(.minutes(2)))
    func policyAndLimitsChangeLiveWhatCannotIsNamedAndABadFileChangesNothing() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let group = MultiThreadedEventLoopGroup.singleton
        let echo = try await LoopbackPeers.echoServer(group: group)
        defer { echo.close(promise: nil) }
        let echoPort = try #require(echo.localAddress?.port)
        try writeConfiguration(tunnels: 8, deny: [])
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--plaintext", "--config", configPath, "--no-ip-layer",
            "--control", directory + "/server.sock", "--state-directory", directory + "/state",
        ])
        defer { server.terminate() }
        let started = try #require(await server.waitForOutput(containing: "control socket at", timeout: 30))
        let port = try #require(started.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })

        let peer = try await RawTunnelPeer.connect(port: port, group: group, sending: .fetchConfiguration(identifier: 0))
        #expect(await peer.next() != nil)
        #expect(try await open(1, port: echoPort, on: peer) == .success)

        // The echo destination denied, one more tunnel allowed, and a new listen address that needs a restart.
        try writeConfiguration(tunnels: 9, deny: ["127.0.0.1:\(echoPort)"], listenAddress: "127.0.0.2")
        kill(server.processIdentifier, SIGHUP)
        let reloaded = try #require(await server.waitForOutput(containing: "kept-until-restart"))
        #expect(reloaded.contains("max tunnels: 8 → 9"), "\(reloaded)")
        #expect(reloaded.contains("destination policy"), "\(reloaded)")
        #expect(reloaded.contains("listen address: 127.0.0.1 → 127.0.0.2"), "\(reloaded)")
        // The open tunnel meets the new rule on its next flow; its open flow carries on.
        #expect(try await open(3, port: echoPort, on: peer) == .refused)
        try await peer.send(.data(identifier: 1, payload: ByteBuffer(string: "still here")), .close(identifier: 1, direction: .write))
        let (echoed, _) = await peer.collectData(for: 1)
        #expect(echoed == ByteBuffer(string: "still here"))
        // A new tunnel is still served on the old address.
        let second = try await RawTunnelPeer.connect(port: port, group: group, sending: .fetchConfiguration(identifier: 0))
        #expect(await second.next() != nil)

        // A file that does not parse: nothing changes, and the log says why.
        try Data("<plist><dict><key>Server</key>".utf8).write(to: URL(fileURLWithPath: configPath))
        kill(server.processIdentifier, SIGHUP)
        #expect(await server.waitForOutput(containing: "configuration not reloaded, the server keeps every setting it had") != nil)
        #expect(try await open(5, port: echoPort, on: second) == .refused, "the denial read before stays in force")

        // Put back as it was: the destination opens again without a restart.
        try writeConfiguration(tunnels: 8, deny: [])
        kill(server.processIdentifier, SIGHUP)
        #expect(await Loopback.waitUntil(seconds: 10) { server.outputSoFar.components(separatedBy: "max tunnels: 9 → 8").count == 2 })
        #expect(try await open(7, port: echoPort, on: peer) == .success)
        #expect(peer.channel.isActive && second.channel.isActive, "no tunnel was dropped by any reload")
        await peer.close()
        await second.close()
    }
}
