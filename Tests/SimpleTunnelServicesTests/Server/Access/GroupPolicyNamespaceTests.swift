import Foundation
import Testing
@testable import SimpleTunnelServices

/// `Server.Groups` policies with the built programs in network namespaces, as
/// users meet them: a staff login and a contractor through `socks` and the IP
/// tunnel, and a group with `AppLayer` false. The contractor's flow to a
/// destination its group does not allow gets SOCKS reply 2; its packets there
/// are dropped and counted; the staff login reaches both.
@Suite("Group policies through socks and the IP tunnel", .serialized, .timeLimit(.minutes(5)))
struct GroupPolicyNamespaceTests {
    static let passwords = ["alice": "alice-pw", "bob": "bob-pw", "ivy": "ivy-pw"]

    static func lab() throws -> VPNLab {
        let vpn = try VPNLab()
        vpn.poolEnd = "10.90.0.20"
        vpn.serverKeys = "<key>Groups</key><dict>"
            + "<key>staff</key><dict/>"
            + "<key>contractors</key><dict><key>Policy</key><dict><key>Allow</key><array><string>198.18.2.2:8080</string></array></dict></dict>"
            + "<key>ip-only</key><dict><key>AppLayer</key><false/></dict>"
            + "</dict><key>Users</key><dict>"
            + "<key>alice</key><dict><key>Groups</key><array><string>staff</string></array></dict>"
            + "<key>bob</key><dict><key>Groups</key><array><string>contractors</string></array></dict>"
            + "<key>ivy</key><dict><key>Groups</key><array><string>ip-only</string></array></dict>"
            + "</dict>"
        return vpn
    }

    /// `tunnel-client socks` as `login` in `namespace`, on 127.0.0.1:1080 there.
    static func socks(_ login: String, _ vpn: VPNLab, in namespace: String, index: Int) async throws -> ExternalProcess {
        let identity = try vpn.pki.issueClient("client-socks-\(login)")
        let process = try vpn.lab.start(in: namespace, [
            BuiltPrograms.tunnelClient, "socks", "--server", "198.18.\(10 + index).1:4433", "--ca", vpn.pki.caFile,
            "--cert", vpn.pki.certificatePath(identity), "--key", vpn.pki.keyPath(identity), "--server-name", "localhost",
            "--user", login, "--password-file", DatabaseReloadNamespaceTests.passwordFile(vpn, login, passwords[login] ?? ""),
            "--listen", "127.0.0.1:1080", "--control", vpn.directory + "/socks-\(login).sock", "--log-level", "info",
        ])
        #expect(await process.waitForOutput(containing: "tunnel up", timeout: 20) != nil, "\(process.outputSoFar)")
        return process
    }

    /// What curl says of a GET of `url` from `namespace`: the HTTP status, or its error (with SOCKS's reply code).
    static func get(_ url: String, _ vpn: VPNLab, in namespace: String, socks: Bool) throws -> String {
        let proxy = socks ? "--socks5 127.0.0.1:1080 " : ""
        return try vpn.lab.run(
            in: namespace, ["sh", "-c", "curl -sS -o /dev/null -w '%{http_code}' --max-time 4 \(proxy)\(url) 2>&1; true"], timeout: .seconds(15)
        ).standardOutput
    }

    static func droppedByPolicy(_ vpn: VPNLab) throws -> Int {
        let metrics = try vpn.lab.run(in: vpn.server, ["curl", "-s", "--max-time", "5", "http://127.0.0.1:9478/metrics"]).standardOutput
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(#"simpletunnel_dropped_packets_total{reason="policy"}"#) }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func eachLoginMeetsItsGroupsPolicyThroughSocksAndTheIPTunnel() async throws {
        let vpn = try Self.lab()
        defer { vpn.cleanup() }
        let content = vpn.directory + "/web"
        try FileManager.default.createDirectory(atPath: content, withIntermediateDirectories: true)
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: content + "/index.html"))
        for port in [8080, 8081] {
            _ = try vpn.lab.start(in: vpn.destination, ["python3", "-u", "-m", "http.server", "\(port)", "--bind", "198.18.2.2", "--directory", content])
        }
        try OperatedServer.write(Self.passwords, to: vpn.directory + "/users")
        try await vpn.startServer(arguments: ["--users", vpn.directory + "/users", "--metrics", "127.0.0.1:9478"])
        #expect(await Loopback.waitUntil(seconds: 10) { (try? Self.get("http://198.18.2.2:8081/", vpn, in: vpn.destination, socks: false)) == "200" })

        // Through socks: bob reaches the one destination his group allows, and is refused the other with reply 2.
        let socksNamespace = try vpn.clientNamespace(1)
        let bob = try await Self.socks("bob", vpn, in: socksNamespace, index: 1)
        #expect(try Self.get("http://198.18.2.2:8080/", vpn, in: socksNamespace, socks: true) == "200")
        let refused = try Self.get("http://198.18.2.2:8081/", vpn, in: socksNamespace, socks: true)
        #expect(refused.contains("(2)"), "SOCKS5 reply 2, not allowed by ruleset: \(refused)")
        bob.terminate()
        _ = await bob.finish(timeout: 20)
        // Alice, staff, reaches both; ivy's group has no app layer at all.
        let alice = try await Self.socks("alice", vpn, in: socksNamespace, index: 1)
        #expect(try Self.get("http://198.18.2.2:8081/", vpn, in: socksNamespace, socks: true) == "200")
        alice.terminate()
        _ = await alice.finish(timeout: 20)
        let ivy = try await Self.socks("ivy", vpn, in: socksNamespace, index: 1)
        let ivyRefused = try Self.get("http://198.18.2.2:8080/", vpn, in: socksNamespace, socks: true)
        #expect(ivyRefused.contains("(2)"), "\(ivyRefused)")
        ivy.terminate()
        _ = await ivy.finish(timeout: 20)

        // Through the IP tunnel: bob's packets to the other port, and his pings, are dropped and counted.
        let bobNamespace = try vpn.clientNamespace(2)
        let bobIP = try await FixedAddressNamespaceTests.start("bob", vpn, in: bobNamespace, index: 2, passwords: Self.passwords)
        let before = try Self.droppedByPolicy(vpn)
        #expect(try Self.get("http://198.18.2.2:8080/", vpn, in: bobNamespace, socks: false) == "200")
        let blocked = try Self.get("http://198.18.2.2:8081/", vpn, in: bobNamespace, socks: false)
        #expect(blocked.contains("(28)"), "dropped, so curl times out: \(blocked)")
        let ping = try vpn.lab.run(in: bobNamespace, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "198.18.2.2"], check: false)
        #expect(ping.status != 0, "bob's pings must not pass: \(ping.standardOutput)")
        let dropped = try Self.droppedByPolicy(vpn) - before
        #expect(dropped >= 3, "a SYN and two pings at least, dropped for policy: \(dropped)")
        // Alice's IP tunnel reaches both, and pings.
        let aliceNamespace = try vpn.clientNamespace(3)
        let aliceIP = try await FixedAddressNamespaceTests.start("alice", vpn, in: aliceNamespace, index: 3, passwords: Self.passwords)
        #expect(try Self.get("http://198.18.2.2:8081/", vpn, in: aliceNamespace, socks: false) == "200")
        #expect(try vpn.lab.run(in: aliceNamespace, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false).status == 0)
        print("group policy: \(dropped) of bob's packets dropped for policy; socks refusals: bob \(refused), ivy \(ivyRefused)")
        await FixedAddressNamespaceTests.stop([bobIP, aliceIP])
    }
}
