import Foundation
import Testing
@testable import SimpleTunnelServices

/// Two real servers behind Debian's HAProxy in TCP mode, sharing a throwaway
/// PostgreSQL through its Unix socket (which every network namespace reaches):
///
///     client ns 198.18.1.2 ═ 198.18.1.1 lb ns (haproxy) ─┬─ 198.18.21.1 ═ 198.18.21.2 server A ns
///                                                       └─ 198.18.22.1 ═ 198.18.22.2 server B ns
///     each server: TUN stun0, 10.90.0.1; pool 10.90.0.2-10.90.0.3, pushed route 10.90.0.0/24
// @unchecked: made off the concurrency pool (setting up takes seconds), then used by one test only.
final class LoadBalancedLab: @unchecked Sendable {
    let lab: NetworkNamespaceLab
    let pki: TestPKI
    let postgres: ThrowawayPostgres
    let directory: String
    let client: String
    let balancer: String
    let servers: [String]

    static var isAvailable: Bool {
        NetworkNamespaceLab.isAvailable && TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)
            && TestRequirements.met(FileManager.default.isExecutableFile(atPath: "/usr/sbin/haproxy"), "Debian's haproxy (apt-get install haproxy)")
    }

    /// A setup step that fails leaves nothing behind: no namespace, and no PostgreSQL server running on.
    init() throws {
        let lab = NetworkNamespaceLab()
        let pki = try TestPKI()
        var postgres: ThrowawayPostgres?
        do {
            postgres = try ThrowawayPostgres.start()
            directory = NSTemporaryDirectory() + "failover-lab-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            client = try lab.makeNamespace()
            balancer = try lab.makeNamespace()
            servers = [try lab.makeNamespace(), try lab.makeNamespace()]
            try lab.addVethPair((client, "uplink", "198.18.1.2/24"), (balancer, "to-client", "198.18.1.1/24"))
            for (index, server) in servers.enumerated() {
                try lab.addVethPair((balancer, "to-srv\(index)", "198.18.\(21 + index).1/24"), (server, "uplink", "198.18.\(21 + index).2/24"))
            }
        } catch {
            lab.cleanup()
            pki.remove()
            postgres?.remove()
            throw error
        }
        self.lab = lab
        self.pki = pki
        self.postgres = try #require(postgres)
    }

    func addLogin(_ login: String, password: String) throws {
        try ThrowawayPostgres.run(
            ["sh", "-c", "printf '%s\\n' \"$0\" | \"$1\" passwd \"$2\" --database \"$3\"", password, BuiltPrograms.tunnelServer, login, postgres.socketURL],
            as: nil)
    }

    /// - Parameter proxyProtocol: take PROXY v2 headers from the balancer's address on this server's link.
    func startServer(_ index: Int, proxyProtocol: Bool = false) async throws -> ExternalProcess {
        let configuration = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
              <key>IPv4</key><dict>
                <key>Pool</key><dict><key>StartAddress</key><string>10.90.0.2</string><key>EndAddress</key><string>10.90.0.3</string></dict>
                <key>Routes</key><array><dict><key>Address</key><string>10.90.0.0</string><key>Netmask</key><string>255.255.255.0</string></dict></array>
              </dict>
              <key>DNS</key><dict><key>Servers</key><array/></dict>
            </dict></plist>
            """
        let path = directory + "/server.plist"
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: path))
        let process = try lab.start(in: servers[index], [
            BuiltPrograms.tunnelServer, "--host", "0.0.0.0", "--port", "4433", "--config", path,
            "--cert", pki.certificatePath("server"), "--key", pki.keyPath("server"),
            "--tun", "stun0", "--state-directory", directory + "/state-\(index)", "--database", postgres.socketURL,
        ] + (proxyProtocol ? ["--proxy-protocol-from", "198.18.\(21 + index).1/32"] : []))
        let output = await process.waitForOutput(containing: "listening on 0.0.0.0:4433", timeout: 30)
        try #require(output != nil, "server \(index) did not start:\n\(process.outputSoFar)")
        return process
    }

    /// `balance first`: every tunnel goes to A while it is up, so the test knows where the client is.
    /// - Parameter sendProxy: head each connection to a server with a PROXY v2 header (`send-proxy-v2`).
    func startBalancer(sendProxy: Bool = false) async throws -> ExternalProcess {
        let proxy = sendProxy ? " send-proxy-v2" : ""
        let configuration = """
            global
                maxconn 100
            defaults
                mode tcp
                timeout connect 2s
                timeout client 2m
                timeout server 2m
                retries 3
                option redispatch
            frontend tunnels
                bind 198.18.1.1:4433
                default_backend tunnel_servers
            backend tunnel_servers
                balance first
                server a 198.18.21.2:4433\(proxy) check inter 500ms fall 1 rise 1
                server b 198.18.22.2:4433\(proxy) check inter 500ms fall 1 rise 1

            """
        let path = directory + "/haproxy.cfg"
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: path))
        try lab.run(in: balancer, ["/usr/sbin/haproxy", "-c", "-f", path])
        let process = try lab.start(in: balancer, ["/usr/sbin/haproxy", "-db", "-f", path])
        // Up once it accepts on its frontend.
        for _ in 0..<100 {
            if try lab.run(in: client, ["bash", "-c", "exec 3<>/dev/tcp/198.18.1.1/4433"], check: false).status == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return process
    }

    func startClient(login: String, password: String) async throws -> ExternalProcess {
        let passwordFile = directory + "/password-\(login)"
        _ = FileManager.default.createFile(atPath: passwordFile, contents: Data("\(password)\n".utf8), attributes: [.posixPermissions: 0o600])
        let process = try lab.start(in: client, [
            BuiltPrograms.tunnelClient, "ip", "--server", "198.18.1.1:4433", "--ca", pki.caFile, "--server-name", "localhost",
            "--user", login, "--password-file", passwordFile, "--tun", "stun1", "--control", directory + "/control.sock", "--state-directory", directory + "/client-state",
        ])
        let output = await process.waitForOutput(containing: "IP tunnel up", timeout: 30)
        try #require(output != nil, "the client did not come up:\n\(process.outputSoFar)")
        return process
    }

    func ping() throws -> Bool {
        try lab.run(in: client, ["ping", "-c", "1", "-W", "1", "10.90.0.1"], check: false).status == 0
    }

    func clientAddresses() throws -> String {
        try lab.run(in: client, ["ip", "-4", "addr", "show", "dev", "stun1"]).standardOutput
    }

    func cleanup() {
        lab.cleanup()
        pki.remove()
        postgres.remove()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite("Several servers behind HAProxy, in network namespaces", .serialized, .timeLimit(.minutes(5)))
struct LoadBalancedFailoverTests {
    @Test(.enabled(if: LoadBalancedLab.isAvailable, "needs root, ip netns, /dev/net/tun, postgresql and haproxy"))
    func whenServerAStopsTheClientComesBackThroughBWithTheSameAddressAndPingWorks() async throws {
        // Namespaces, PostgreSQL and a password hash block for seconds: not on one of the pool's few threads.
        let failover = try await ThrowawayPostgres.offThePool { try LoadBalancedLab() }
        defer { failover.cleanup() }
        try await ThrowawayPostgres.offThePool { try failover.addLogin("alice", password: "correct horse") }
        let a = try await failover.startServer(0)
        let b = try await failover.startServer(1)
        _ = try await failover.startBalancer()
        let client = try await failover.startClient(login: "alice", password: "correct horse")
        #expect(try failover.clientAddresses().contains("10.90.0.2"))
        #expect(try failover.ping(), "no ping through the tunnel to server A:\n\(client.outputSoFar)")
        #expect(a.outputSoFar.contains("login accepted"), "the balancer did not send the first tunnel to A")

        let stopped = ContinuousClock.now
        a.terminate()
        var answered = false
        for _ in 0..<60 where !answered {
            answered = try failover.ping()
        }
        let failoverTime = ContinuousClock.now - stopped
        #expect(answered, "no ping through B after A stopped:\n\(client.outputSoFar)\n\(b.outputSoFar)")
        print("failover: server A stopped -> ping answered through B after \(failoverTime)")
        #expect(b.outputSoFar.contains("login accepted"), "the client did not reach B")
        #expect(try failover.clientAddresses().contains("10.90.0.2"), "the client's address changed")
        // What the client said while the balancer still tried A names a failover, not a server without TLS.
        #expect(!client.outputSoFar.contains("--plaintext"), "\(client.outputSoFar)")
        #expect(!client.outputSoFar.contains("another client"), "\(client.outputSoFar)")
    }

    @Test(.enabled(if: LoadBalancedLab.isAvailable, "needs root, ip netns, /dev/net/tun, postgresql and haproxy"))
    func withSendProxyV2TheServerSeesTheClientsAddressNotTheBalancers() async throws {
        let lab = try await ThrowawayPostgres.offThePool { try LoadBalancedLab() }
        defer { lab.cleanup() }
        try await ThrowawayPostgres.offThePool { try lab.addLogin("alice", password: "correct horse") }
        let a = try await lab.startServer(0, proxyProtocol: true)
        _ = try await lab.startBalancer(sendProxy: true)
        let client = try await lab.startClient(login: "alice", password: "correct horse")
        #expect(try lab.ping(), "no ping through the tunnel:\n\(client.outputSoFar)")
        // The login's line names the client as its header said (198.18.1.2), not HAProxy's side of A's link.
        let accepted = a.outputSoFar.split(separator: "\n").filter { $0.contains("login accepted") }
        #expect(accepted.count == 1 && accepted.allSatisfy { $0.contains("198.18.1.2:") && !$0.contains("198.18.21.1") }, "\(a.outputSoFar)")
        // HAProxy's health checks (every 500 ms) are no refusals.
        #expect(!a.outputSoFar.contains("proxy_header"), "\(a.outputSoFar)")
    }
}
