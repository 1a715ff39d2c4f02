import Foundation
import Testing
@testable import SimpleTunnelServices

/// The stock sample app's mode off loopback, in network namespaces the test
/// creates: the server listens on a LAN address with `--plaintext
/// --plaintext-clients` that LAN; a peer from the LAN is served, a peer routed
/// in from elsewhere is closed unanswered, and the refusal is counted and logged.
///
///     lan ns 198.18.30.2 ═ 198.18.30.1 ── server ns ── 198.18.31.1 ═ 198.18.31.2 other ns
@Suite("Plaintext clients in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct PlaintextClientsNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, ip netns and python3"), .timeLimit(.minutes(2)))
    func theListedLANIsServedAndAnotherAddressIsClosedUnreadAndCounted() async throws {
        let lab = NetworkNamespaceLab()
        let folder = try TemporaryDirectory()
        defer { lab.cleanup() }
        let server = try lab.makeNamespace()
        let lan = try lab.makeNamespace()
        let other = try lab.makeNamespace()
        try lab.addVethPair((server, "lan", "198.18.30.1/24"), (lan, "uplink", "198.18.30.2/24"))
        try lab.addVethPair((server, "other", "198.18.31.1/24"), (other, "uplink", "198.18.31.2/24"))
        try lab.run(in: other, ["ip", "route", "add", "198.18.30.0/24", "via", "198.18.31.1"])

        let process = try lab.start(in: server, [
            BuiltPrograms.tunnelServer, "--host", "198.18.30.1", "--port", "4433", "--plaintext", "--plaintext-clients", "198.18.30.0/24",
            "--metrics", "127.0.0.1:9464", "--no-ip-layer", "--state-directory", folder.path + "/state",
        ])
        // Its last line at start.
        let started = await process.waitForOutput(containing: "connect with:", timeout: 20)
        try #require(started != nil, "the server did not start:\n\(process.outputSoFar)")
        #expect(process.outputSoFar.contains("neither encrypted nor authenticated"), "\(process.outputSoFar)")
        #expect(process.outputSoFar.contains("198.18.30.0/24"))
        #expect(process.outputSoFar.contains("tunnel-client config --server 198.18.30.1:4433 --plaintext"))

        // A web server behind the tunnel server, for the flow to reach (not on the server's own addresses, which flows may not reach).
        let web = try lab.start(in: other, ["python3", "-u", "-m", "http.server", "8080", "--bind", "198.18.31.2", "--directory", folder.path])
        _ = await web.waitForOutput(containing: "Serving", timeout: 10)

        // From the LAN: the sample app's open and a request on the flow, then our own client's --plaintext.
        let served = try lab.run(
            in: lan, ["python3", "-c", NamespaceScripts.sampleAppPeer, "198.18.30.1", "4433", "198.18.30.2", "198.18.31.2", "8080"],
            timeout: .seconds(30), check: false)
        #expect(served.standardOutput.contains("open result 0"), "\(served.standardOutput)\(served.standardError)\n\(process.outputSoFar)")
        #expect(served.standardOutput.contains("answer HTTP/1.0 200"), "\(served.standardOutput)")
        let configuration = try lab.run(
            in: lan, [BuiltPrograms.tunnelClient, "config", "--server", "198.18.30.1:4433", "--plaintext", "--once"], timeout: .seconds(30),
            check: false)
        #expect(configuration.status == 0, "\(configuration.standardOutput)\(configuration.standardError)")

        // From elsewhere: closed at accept, with no reply.
        let refused = try lab.run(
            in: other, ["python3", "-c", NamespaceScripts.sampleAppPeer, "198.18.30.1", "4433", "198.18.31.2", "198.18.31.2", "8080"],
            timeout: .seconds(30), check: false)
        #expect(refused.standardOutput.contains("closed unanswered"), "\(refused.standardOutput)\(refused.standardError)")
        let logged = await process.waitForOutput(containing: "refusing connections: the address is not in --plaintext-clients", timeout: 10)
        #expect(logged?.contains("address=198.18.31.2") == true, "\(process.outputSoFar)")

        let metrics = try lab.run(
            in: server, ["python3", "-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode())"])
        #expect(metrics.standardOutput.contains("simpletunnel_admission_refusals_total{reason=\"unlisted_address\"} 1"), "\(metrics.standardOutput)")
        process.terminate()
        _ = await process.finish(timeout: 20)
    }
}
