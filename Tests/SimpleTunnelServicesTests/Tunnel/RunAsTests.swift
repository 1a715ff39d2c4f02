import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("--run-as on loopback", .timeLimit(.minutes(3)))
struct RunAsTests {
    /// The Uid line of every live thread of `pid`, and their effective capabilities.
    static func threads(of pid: Int32) throws -> [(uid: String, effective: UInt64)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { return nil }
            let lines = text.split(separator: "\n")
            let uid = lines.first { $0.hasPrefix("Uid:") }.map { $0.dropFirst(4).trimmingCharacters(in: .whitespaces) } ?? ""
            let effective = lines.first { $0.hasPrefix("CapEff:") }.flatMap { UInt64($0.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) }
            return (uid, effective ?? .max)
        }
    }

    @Test(.enabled(if: TestRequirements.met(geteuid() == 0, "root"), "needs root to become another user"))
    func aForwardingClientBecomesNobodyWithNoCapabilitiesAndKeepsForwarding() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await ReconnectionTests.RestartableServer(group: group)
        try await server.start()
        let echo = try await LoopbackPeers.echoServer(group: group)
        let echoPort = try #require(echo.localAddress?.port)
        let directory = NSTemporaryDirectory() + "run-as-\(UUID().uuidString.prefix(8))"
        let client = try ExternalProcess([
            BuiltPrograms.tunnelClient, "forward", "-L", "127.0.0.1:0:127.0.0.1:\(echoPort)",
            "--server", "127.0.0.1:\(server.port)", "--pin-sha256", server.identity.sha256FingerprintHex,
            "--run-as", "nobody", "--control", directory + "/client.sock", "--log-level", "info",
        ])
        defer { client.terminate() }
        // The listener is bound (and privileges dropped) before the tunnel opens: wait for both.
        let output = await client.waitForOutput(containing: "running as nobody", timeout: 20)
        try #require(output != nil, "\(client.outputSoFar)")
        try #require(await client.waitForOutput(containing: "tunnel up", timeout: 20) != nil, "\(client.outputSoFar)")
        let line = try #require(client.outputSoFar.split(separator: "\n").first { $0.contains("forwarding 127.0.0.1:") })
        let port = try #require(line.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }.flatMap { Int($0.split(separator: ":")[1]) })

        let threads = try Self.threads(of: client.processIdentifier)
        #expect(!threads.isEmpty)
        for thread in threads {
            #expect(thread.uid.split(whereSeparator: \.isWhitespace) == ["65534", "65534", "65534", "65534"], "\(threads)")
            #expect(thread.effective == 0, "a forwarding client keeps no capability: \(threads)")
        }
        let payload = ByteBuffer(string: "as nobody")
        #expect(try await LoopbackPeers.exchange(payload, port: port, group: group) == payload)

        client.terminate()
        await server.stop()
        server.remove()
        try? FileManager.default.removeItem(atPath: directory)
        try await echo.close()
        try await group.shutdownGracefully()
    }
}
