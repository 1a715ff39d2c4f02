import Testing
@testable import SimpleTunnelServices

@Suite("IP tunnel in network namespaces: the destination policy", .serialized, .timeLimit(.minutes(3)))
struct IPPolicyNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aDeniedDestinationGetsNoPacketsWhileItsNeighbourDoes() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        // A second address on the destination: the same host, one denied and one not.
        try vpn.lab.run(in: vpn.destination, ["ip", "addr", "add", "198.18.2.3/24", "dev", "to-srv"])
        try await vpn.startServer(arguments: ["--deny", "198.18.2.3"])
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")

        let allowed = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(allowed.status == 0, "ping failed: \(allowed.standardOutput)\n\(process.outputSoFar)")
        let denied = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "198.18.2.3"], check: false)
        #expect(denied.status != 0, "\(denied.standardOutput)")
        let serverLog = await vpn.serverProcess?.waitForOutput(containing: "whose destination the policy refuses", timeout: 10)
        #expect(serverLog != nil, "the server did not report the dropped packets")
        // It listens on 0.0.0.0: the start log says the public default applies.
        #expect(vpn.serverProcess?.outputSoFar.contains("may not reach this machine's own addresses") == true)
    }
}
