import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// The kill switch against TunnelVision: the server's namespace plays the LAN
/// router too, and counts what reaches it for the probed networks outside the tunnel.
@Suite("Kill switch in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct KillSwitchNamespaceTests {
    static var isAvailable: Bool {
        NetworkNamespaceLab.isAvailable && TestRequirements.met(SystemCommandRunner().locate("nft") != nil, "nft (nftables)")
    }

    /// Packets the router's probe counted for `network`, arriving from the client's link.
    func counted(_ network: String, in vpn: VPNLab) throws -> Int {
        let listing = try vpn.lab.run(in: vpn.server, ["nft", "list", "chain", "inet", "probe", "in"]).standardOutput
        guard let line = listing.split(separator: "\n").first(where: { $0.contains(network) }) else { return -1 }
        let words = line.split(separator: " ")
        guard let index = words.firstIndex(of: "packets"), index + 1 < words.count else { return -1 }
        return Int(words[index + 1]) ?? -1
    }

    @Test(.enabled(if: KillSwitchNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and nft"))
    func aMoreSpecificLANRouteSendsNothingInTheClearAndAllowLANOpensOnlyItsRange() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(
            in: client, serverAddress: "198.18.11.1", device: "stun1", arguments: ["--allow-lan", "203.0.113.0/24"])
        try vpn.lab.run(in: vpn.server, [
            "nft",
            """
            table inet probe {
              chain in {
                type filter hook prerouting priority -300;
                iifname "cl1" ip daddr 198.51.100.0/24 counter
                iifname "cl1" ip daddr 203.0.113.0/24 counter
              }
            }
            """,
        ])
        // TunnelVision: the LAN's router pushes routes more specific than the tunnel's /1s.
        for network in ["198.51.100.0/24", "203.0.113.0/24"] {
            try vpn.lab.run(in: client, ["ip", "route", "add", network, "via", "198.18.11.1", "dev", "uplink"])
        }
        _ = try vpn.lab.run(in: client, ["ping", "-c", "3", "-i", "0.2", "-W", "1", "198.51.100.7"], check: false)
        _ = try vpn.lab.run(in: client, ["ping", "-c", "3", "-i", "0.2", "-W", "1", "203.0.113.7"], check: false)
        #expect(try counted("198.51.100.0/24", in: vpn) == 0, "a packet left on the LAN outside the tunnel:\n\(process.outputSoFar)")
        #expect(try counted("203.0.113.0/24", in: vpn) >= 3, "--allow-lan did not let its network through")

        let control = vpn.controlPath("stun1")
        let status = try await ControlClient.request("status", path: control, group: MultiThreadedEventLoopGroup.singleton).status
        #expect(status?.killSwitch?.contains("simpletunnel_client_stun1") == true, "\(String(describing: status))")
        // The route watch saw both routes win over the tunnel's halves, and said the kill switch holds.
        #expect(status?.routesOverTunnel == 2, "\(String(describing: status))\n\(process.outputSoFar)")
        #expect(
            process.outputSoFar.contains("wins over the tunnel's 128.0.0.0/1: 198.51.100.0/24 via 198.18.11.1 dev uplink; the kill switch drops"),
            "\(process.outputSoFar)")
        #expect(process.outputSoFar.contains("wins over the tunnel's 128.0.0.0/1: 203.0.113.0/24"), "\(process.outputSoFar)")
        // The tunnel itself still works.
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping through the tunnel failed: \(ping.standardOutput)\n\(process.outputSoFar)")

        // While the server is away, the kill switch holds, and the client is back when it returns.
        await vpn.stopServer()
        _ = await process.waitForOutput(containing: "tunnel lost", timeout: 20)
        _ = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "198.51.100.7"], check: false)
        #expect(try counted("198.51.100.0/24", in: vpn) == 0)
        let table = try vpn.lab.run(in: client, ["nft", "list", "tables"]).standardOutput
        #expect(table.contains("simpletunnel_client_stun1"), "\(table)")
        try await vpn.restartServer(pushRoutes: false)
        #expect(await process.waitForOutput(containing: "tunnel up again", timeout: 30) != nil, "\(process.outputSoFar)")
        let again = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(again.status == 0, "ping after the restart failed: \(again.standardOutput)\n\(process.outputSoFar)")

        // A clean stop removes the table with the routes.
        _ = try await ControlClient.request("stop", path: control, group: MultiThreadedEventLoopGroup.singleton)
        let result = await process.finish(timeout: 20)
        #expect(result.status == 0, "\(result.output)")
        let after = try vpn.lab.run(in: client, ["nft", "list", "tables"]).standardOutput
        #expect(!after.contains("simpletunnel_client"), "\(after)")
    }

    /// TunnelCrack's LocalNet (the LAN's router owns an address the user meant to
    /// reach through the tunnel, on a LAN prefix that covers it) and ServerIP (the
    /// server's name leads to an address the attacker controls, which the client
    /// must route outside the tunnel): nothing but the tunnel's own connection reaches it.
    /// (With `--kill-switch off` the IPv4 probes count 9, 7 and 2 packets.)
    @Test(.enabled(if: KillSwitchNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and nft"))
    func localNetAndServerIPAttacksSendNothingInTheClear() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let client = try vpn.clientNamespace(1)
        // The client's names come from files in its namespace only: vpn.test is the address on the LAN's side.
        let etc = "/etc/netns/\(client)"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try Data("198.18.11.1 vpn.test\n".utf8).write(to: URL(fileURLWithPath: etc + "/hosts"))
        try Data("nameserver 127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: etc + "/resolv.conf"))
        // The router impersonates 192.0.2.7 on a LAN prefix the client is on.
        try vpn.lab.run(in: vpn.server, ["ip", "address", "add", "192.0.2.1/24", "dev", "cl1"])
        try vpn.lab.run(in: vpn.server, ["ip", "address", "add", "192.0.2.7/24", "dev", "cl1"])
        let web = try vpn.lab.start(in: vpn.server, ["python3", "-u", "-m", "http.server", "8080", "--bind", "0.0.0.0"])
        _ = await web.waitForOutput(containing: "Serving", timeout: 10)
        let process = try await vpn.startClient(in: client, serverAddress: "vpn.test", device: "stun1")
        try vpn.lab.run(in: client, ["ip", "address", "add", "192.0.2.5/24", "dev", "uplink"])
        // TunnelVision for IPv6: a route more specific than the blackholes around this IPv4-only tunnel.
        try vpn.lab.run(in: client, ["ip", "-6", "address", "add", "fd00:11::2/64", "dev", "uplink", "nodad"])
        try vpn.lab.run(in: vpn.server, ["ip", "-6", "address", "add", "fd00:11::1/64", "dev", "cl1", "nodad"])
        try vpn.lab.run(in: client, ["ip", "-6", "route", "add", "2000::/3", "via", "fd00:11::1", "dev", "uplink"])
        try vpn.lab.run(in: vpn.server, [
            "nft",
            """
            table inet probe {
              chain in {
                type filter hook prerouting priority -300;
                iifname "cl1" ip daddr 192.0.2.0/24 counter
                iifname "cl1" ip daddr 198.18.11.1 tcp dport != 4433 counter
                iifname "cl1" ip daddr 198.18.11.1 ip protocol icmp counter
                iifname "cl1" ip6 daddr 2000::/3 counter
              }
            }
            """,
        ])
        for target in ["192.0.2.7", "198.18.11.1"] {
            _ = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "1", target], check: false)
            _ = try vpn.lab.run(in: client, ["curl", "-s", "--max-time", "2", "http://\(target):8080/"], timeout: .seconds(10), check: false)
        }
        _ = try vpn.lab.run(in: client, ["ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "2001:db8::7"], check: false)
        let listing = try vpn.lab.run(in: vpn.server, ["nft", "list", "chain", "inet", "probe", "in"]).standardOutput
        let counts = listing.split(separator: "\n").filter { $0.contains("counter") }.map { line -> Int in
            let words = line.split(separator: " ")
            guard let index = words.firstIndex(of: "packets"), index + 1 < words.count else { return -1 }
            return Int(words[index + 1]) ?? -1
        }
        #expect(counts == [0, 0, 0, 0], "packets left on the LAN outside the tunnel:\n\(listing)\n\(process.outputSoFar)")
        // The tunnel itself, connected by name through the same address, still carries traffic.
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping through the tunnel failed: \(ping.standardOutput)\n\(process.outputSoFar)")
    }

    /// A server that answers on the real one's address with a certificate the
    /// client does not trust, while the tunnel is down: the client neither gives
    /// up nor lets anything out, and is back when the real server returns.
    @Test(.enabled(if: KillSwitchNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and nft"))
    func anImpostorWithAnUntrustedCertificateMakesTheClientWaitNotFailOpen() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")
        try vpn.lab.run(in: client, ["ip", "route", "add", "198.51.100.0/24", "via", "198.18.11.1", "dev", "uplink"])
        try vpn.lab.run(in: vpn.server, [
            "nft",
            """
            table inet probe {
              chain in {
                type filter hook prerouting priority -300;
                iifname "cl1" ip daddr 198.51.100.0/24 counter
              }
            }
            """,
        ])
        await vpn.stopServer()
        _ = await process.waitForOutput(containing: "tunnel lost", timeout: 20)
        let other = try TestPKI()
        defer { other.remove() }
        let impostor = try vpn.lab.start(in: vpn.server, [
            BuiltPrograms.tunnelServer, "--host", "0.0.0.0", "--port", "4433", "--cert", other.certificatePath("server"),
            "--key", other.keyPath("server"), "--client-ca", other.caFile, "--state-directory", vpn.directory + "/impostor-state",
        ])
        _ = await impostor.waitForOutput(containing: "listening on 0.0.0.0:4433", timeout: 20)
        #expect(await process.waitForOutput(containing: "posing as it", timeout: 30) != nil, "\(process.outputSoFar)\nimpostor:\n\(impostor.outputSoFar)")
        _ = try vpn.lab.run(in: client, ["ping", "-c", "3", "-i", "0.2", "-W", "1", "198.51.100.7"], check: false)
        #expect(try counted("198.51.100.0/24", in: vpn) == 0, "a packet left in the clear while an impostor answered")
        #expect(process.isRunning, "the client gave up on an impostor:\n\(process.outputSoFar)")
        let tables = try vpn.lab.run(in: client, ["nft", "list", "tables"]).standardOutput
        #expect(tables.contains("simpletunnel_client_stun1"), "\(tables)")

        impostor.terminate()
        _ = await impostor.finish(timeout: 20)
        try await vpn.restartServer(pushRoutes: false)
        #expect(await process.waitForOutput(containing: "tunnel up again", timeout: 40) != nil, "\(process.outputSoFar)")
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping after the real server returned failed: \(ping.standardOutput)\n\(process.outputSoFar)")
    }

    @Test(.enabled(if: KillSwitchNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and nft"))
    func aSplitTunnelGetsNoKillSwitch() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: true)
        let client = try vpn.clientNamespace(1)
        _ = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")
        let tables = try vpn.lab.run(in: client, ["nft", "list", "tables"]).standardOutput
        #expect(!tables.contains("simpletunnel_client"), "\(tables)")
    }
}
