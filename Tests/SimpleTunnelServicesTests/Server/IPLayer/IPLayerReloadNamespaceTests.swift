import Foundation
import Testing
@testable import SimpleTunnelServices

/// In the operator's order, with the built programs: start the server, reload
/// it, then connect a new client. A reload hands on everything the running
/// server made (the IP layer, the metrics, the control socket): each is used
/// after a reload here.
@Suite("A reloaded server keeps its IP layer, metrics and control socket", .serialized, .timeLimit(.minutes(4)))
struct IPLayerReloadNamespaceTests {
    static func reloads(in process: ExternalProcess) -> Int {
        process.outputSoFar.components(separatedBy: "configuration reloaded").count - 1
    }

    /// SIGHUP, then waits until the server said it reloaded once more.
    static func hangUp(_ process: ExternalProcess) async throws {
        let before = reloads(in: process)
        kill(process.processIdentifier, SIGHUP)
        let reloaded = await Loopback.waitUntil(seconds: 20) { reloads(in: process) > before }
        try #require(reloaded, "no reload was logged:\n\(process.outputSoFar)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func everyNewClientGetsALeaseAfterEachReload() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try vpn.lab.run(in: vpn.destination, ["ip", "addr", "add", "198.18.2.3/24", "dev", "to-srv"])
        let control = vpn.directory + "/server.sock"
        try await vpn.startServer(arguments: ["--metrics", "127.0.0.1:9477", "--control", control])
        let server = try #require(vpn.serverProcess)

        // An unchanged file: the next client still gets its lease and pings through.
        try await Self.hangUp(server)
        #expect(server.outputSoFar.contains("changed=nothing"), "\(server.outputSoFar)")
        let first = try vpn.clientNamespace(1)
        var client = try await vpn.startClient(in: first, serverAddress: "198.18.11.1", device: "stun1")
        let ping = try vpn.lab.run(in: first, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping failed after an unchanged reload: \(ping.standardOutput) \(ping.standardError)\n\(client.outputSoFar)")
        client.terminate()
        _ = await client.finish(timeout: 20)

        // A changed policy: a new client's lease, and the new denial in force for its packets.
        try vpn.writeServerConfiguration(deny: ["198.18.2.3"])
        try await Self.hangUp(server)
        let second = try vpn.clientNamespace(2)
        client = try await vpn.startClient(in: second, serverAddress: "198.18.12.1", device: "stun2")
        let allowed = try vpn.lab.run(in: second, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(allowed.status == 0, "ping failed after a policy reload: \(allowed.standardOutput)\n\(client.outputSoFar)\nserver:\n\(server.outputSoFar)")
        let denied = try vpn.lab.run(in: second, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "198.18.2.3"], check: false)
        #expect(denied.status != 0, "the reloaded denial let packets through: \(denied.standardOutput)")
        client.terminate()
        _ = await client.finish(timeout: 20)

        // A changed route, asked for through the control socket: the reconnecting client is pushed the new route.
        try vpn.writeServerConfiguration(routes: [("198.19.0.0", "255.255.0.0")], deny: ["198.18.2.3"])
        let reload = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["reload", "--control", control], timeout: 30)
        let answer = String(decoding: reload.output + reload.errors, as: UTF8.self)
        #expect(reload.status == 0, "\(answer)")
        #expect(answer.contains("configuration: changed pushed configuration"), "\(answer)")
        client = try await vpn.startClient(in: first, serverAddress: "198.18.11.1", device: "stun1")
        let routes = try vpn.lab.run(in: first, ["ip", "route"]).standardOutput
        #expect(routes.contains("198.19.0.0/16 dev stun1"), "\(routes)")
        let again = try vpn.lab.run(in: first, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(again.status == 0, "ping failed after a route reload: \(again.standardOutput)\n\(client.outputSoFar)")

        // The control socket still answers, and the metrics still count: three tunnels, all after a reload.
        let status = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["status", "--control", control], timeout: 30)
        let listed = String(decoding: status.output, as: UTF8.self)
        #expect(status.status == 0 && listed.contains("10.90.0.2"), "\(listed)")
        let metrics = try vpn.lab.run(in: vpn.server, ["curl", "-s", "--max-time", "5", "http://127.0.0.1:9477/metrics"]).standardOutput
        let opened = metrics.split(separator: "\n").first { $0.hasPrefix("simpletunnel_tunnels_total ") }
        #expect(opened.flatMap { Double($0.split(separator: " ").last ?? "") } == 3, "\(metrics)")
        #expect(!server.outputSoFar.contains("the IP layer is off"), "\(server.outputSoFar)")
    }
}
