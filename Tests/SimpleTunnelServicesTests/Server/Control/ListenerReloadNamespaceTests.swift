import Foundation
import Testing
@testable import SimpleTunnelServices

/// A reload judges the file it reads by the address the server really listens
/// on: editing `ListenAddress` (which waits for a restart) must not lift a
/// public listener's protections, and an edit that would leave it without
/// client authentication is refused whole.
@Suite("A reload cannot weaken the running listener", .serialized, .timeLimit(.minutes(3)))
struct ListenerReloadNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"))
    func theServersLoopbackStaysClosedAndMutualTLSStaysRequired() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        let client = try vpn.clientNamespace(1)
        // A service on the server's own loopback, which clients of a public listener must never reach.
        let web = try vpn.lab.start(in: vpn.server, ["python3", "-u", "-m", "http.server", "8080", "--bind", "127.0.0.1", "--directory", vpn.directory])
        _ = await web.waitForOutput(containing: "Serving", timeout: 10)

        let path = vpn.directory + "/listener.plist"
        func write(listen: String, clientCA: Bool) throws {
            let ca = clientCA ? "<key>ClientCA</key><string>\(vpn.pki.caFile)</string>" : ""
            try Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>Server</key><dict>
                <key>ListenAddress</key><string>\(listen)</string>
                <key>Certificate</key><string>\(vpn.pki.certificatePath("server"))</string>
                <key>PrivateKey</key><string>\(vpn.pki.keyPath("server"))</string>\(ca)
                </dict></dict></plist>
                """.utf8
            ).write(to: URL(fileURLWithPath: path))
        }
        try write(listen: "198.18.11.1", clientCA: true)
        let server = try vpn.lab.start(in: vpn.server, [
            BuiltPrograms.tunnelServer, "--config", path, "--port", "4433", "--state-directory", vpn.directory + "/state",
            "--control", vpn.directory + "/server.sock",
        ])
        try #require(await server.waitForOutput(containing: "listening on 198.18.11.1:4433", timeout: 20) != nil, "\(server.outputSoFar)")

        let identity = try vpn.pki.issueClient("client-forward")
        let forward = try vpn.lab.start(in: client, [
            BuiltPrograms.tunnelClient, "forward", "-L", "127.0.0.1:9000:127.0.0.1:8080", "--server", "198.18.11.1:4433",
            "--ca", vpn.pki.caFile, "--cert", vpn.pki.certificatePath(identity), "--key", vpn.pki.keyPath(identity),
            "--server-name", "localhost", "--control", vpn.directory + "/client.sock",
        ])
        try #require(await forward.waitForOutput(containing: "tunnel up", timeout: 20) != nil, "\(forward.outputSoFar)")
        func reachesTheServersLoopback() throws -> Bool {
            let answer = try vpn.lab.run(
                in: client, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "http://127.0.0.1:9000/"], check: false)
            return answer.standardOutput == "200"
        }
        #expect(try !reachesTheServersLoopback(), "a public listener opened its own loopback")

        // The file now names loopback: that waits for a restart, and the listener's protections stay.
        try write(listen: "127.0.0.1", clientCA: true)
        kill(server.processIdentifier, SIGHUP)
        let reloaded = await server.waitForOutput(containing: "listen address: 198.18.11.1 → 127.0.0.1", timeout: 20)
        #expect(reloaded != nil, "\(server.outputSoFar)")
        #expect(server.outputSoFar.contains("changed=nothing"), "the policy and its default denials must not change: \(server.outputSoFar)")
        #expect(try !reachesTheServersLoopback(), "after the reload a public listener opened its own loopback")

        // Client certificates dropped in the same edit: on a public listener that is refused, and nothing changes.
        try write(listen: "127.0.0.1", clientCA: false)
        kill(server.processIdentifier, SIGHUP)
        let refused = await server.waitForOutput(containing: "configuration not reloaded", timeout: 20)
        #expect(refused?.contains("refusing to listen on 198.18.11.1 without client authentication") == true, "\(server.outputSoFar)")
        #expect(try !reachesTheServersLoopback())
        let reload = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["reload", "--control", vpn.directory + "/server.sock"], timeout: 30)
        #expect(reload.status == 1, "a reload that changed nothing must fail where the operator sees it")
        #expect(String(decoding: reload.errors, as: UTF8.self).contains("without client authentication"))
    }
}
