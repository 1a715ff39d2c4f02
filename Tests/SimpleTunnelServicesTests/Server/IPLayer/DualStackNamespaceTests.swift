import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Dual-stack IP tunnel in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct DualStackNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aFullTunnelOverIPv6CarriesPingAndTCPOfBothFamiliesAndDropsSpoofedAndRefusedIPv6() async throws {
        let vpn = try VPNLab(dualStack: true)
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, index: 1, device: "stun1")

        let addresses = try vpn.lab.run(in: client, ["ip", "addr", "show", "dev", "stun1"]).standardOutput
        #expect(addresses.contains("10.90.0.2/32") && addresses.contains("fd00:90::2/128"), "\(addresses)")
        // The server routes each two-address pool as one prefix: the replies below come back through it.
        let serverRoutes = try vpn.lab.run(in: vpn.server, ["ip", "route", "show", "dev", "stun0"]).standardOutput
        #expect(serverRoutes.split(separator: "\n").map { $0.split(separator: " ").first } == ["10.90.0.2/31"], "\(serverRoutes)")
        let serverRoutes6 = try vpn.lab.run(in: vpn.server, ["ip", "-6", "route", "show", "dev", "stun0"]).standardOutput
        #expect(serverRoutes6.contains("fd00:90::2/127"), "\(serverRoutes6)")
        #expect(vpn.serverProcess?.outputSoFar.contains("IPv6 all traffic (no IPv6.Routes)") == true, "the start line names both families' routes")
        // All IPv6 goes through the tunnel, not into a blackhole, except the way to the server itself.
        let routes6 = try vpn.lab.run(in: client, ["ip", "-6", "route", "show", "table", "all"]).standardOutput
        #expect(routes6.contains("::/1 dev stun1") && routes6.contains("8000::/1 dev stun1"), "\(routes6)")
        #expect(!routes6.contains("blackhole"), "\(routes6)")
        #expect(routes6.contains("fd00:11::1 dev uplink"), "\(routes6)")

        for (family, target) in [("-4", "198.18.2.2"), ("-6", "fd00:2::2")] {
            let ping = try vpn.lab.run(in: client, ["ping", family, "-c", "3", "-i", "0.2", "-W", "2", target], check: false)
            #expect(ping.status == 0, "ping \(family) failed: \(ping.standardOutput)\(ping.standardError)\n\(process.outputSoFar)")
        }

        // TCP over IPv6 with a checksum, from a web server in the destination namespace.
        let content = vpn.directory + "/web"
        try FileManager.default.createDirectory(atPath: content, withIntermediateDirectories: true)
        try Data((0..<(2 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }).write(to: URL(fileURLWithPath: content + "/blob"))
        let web = try vpn.lab.start(in: vpn.destination, ["python3", "-u", "-m", "http.server", "8080", "--bind", "fd00:2::2", "--directory", content])
        _ = await web.waitForOutput(containing: "Serving", timeout: 10)
        let sums = try vpn.lab.run(
            in: client, ["sh", "-c", "curl -s --max-time 30 'http://[fd00:2::2]:8080/blob' | sha256sum"], timeout: .seconds(40)
        ).standardOutput
        let expected = try vpn.lab.runner.runChecked(["sha256sum", content + "/blob"]).standardOutput
        #expect(sums.prefix(64) == expected.prefix(64), "\(sums)")

        // A server listening publicly refuses the cloud metadata service's IPv6 address to packets too.
        let metadata = try vpn.lab.run(in: client, ["ping", "-6", "-c", "1", "-W", "1", "fd00:ec2::254"], check: false)
        #expect(metadata.status != 0)
        let refusedLog = await vpn.serverProcess?.waitForOutput(containing: "whose destination the policy refuses", timeout: 10)
        #expect(refusedLog != nil, "the server did not report the refused IPv6 destination:\n\(vpn.serverProcess?.outputSoFar ?? "")")

        // An IPv6 source that is not the lease is dropped by the server and counted in its log.
        try vpn.lab.run(in: client, ["ip", "-6", "addr", "add", "fd00:90::99/128", "dev", "stun1", "nodad"])
        let spoofed = try vpn.lab.run(in: client, ["ping", "-6", "-c", "2", "-W", "1", "-I", "fd00:90::99", "fd00:2::2"], check: false)
        #expect(spoofed.status != 0)
        let serverLog = await vpn.serverProcess?.waitForOutput(containing: "whose source is not the lease", timeout: 10)
        #expect(serverLog != nil, "the server did not report spoofed packets:\n\(vpn.serverProcess?.outputSoFar ?? "")")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func bothLeasesSurviveAServerRestart() async throws {
        let vpn = try VPNLab(dualStack: true)
        defer { vpn.cleanup() }
        try await vpn.startServer()
        let other = try vpn.clientNamespace(1)
        let mine = try vpn.clientNamespace(2)
        let first = try await vpn.startClient(in: other, index: 1, device: "stun1")
        let client = try await vpn.startClient(in: mine, index: 2, device: "stun2")
        let routes6 = try vpn.lab.run(in: mine, ["ip", "-6", "route"]).standardOutput
        #expect(routes6.contains("fd00:2::/64 dev stun2"), "\(routes6)")
        let status = await ClientHintsTests.status(at: vpn.controlPath("stun2"))
        #expect(status?.lease == "10.90.0.3/32, fd00:90::3/128 on stun2", "\(String(describing: status))")

        // The other client leaves, so the lowest addresses are free; the server restarts with its lease file.
        first.terminate()
        #expect(await vpn.serverProcess?.waitForOutput(containing: "released 10.90.0.2", timeout: 20) != nil, "the first client's leases were not released")
        await vpn.stopServer()
        try await vpn.startServer()
        let back = await client.waitForOutput(containing: "IP tunnel back", timeout: 30)
        #expect(back != nil, "\(client.outputSoFar)")
        #expect(client.outputSoFar.contains("with the same addresses 10.90.0.3/32, fd00:90::3/128"), "\(client.outputSoFar)")
        let ping = try vpn.lab.run(in: mine, ["ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "fd00:2::2"], check: false)
        #expect(ping.status == 0, "ping -6 after the restart failed: \(ping.standardOutput)\n\(client.outputSoFar)")
        let leases = try String(contentsOfFile: vpn.directory + "/server-state/leases.json", encoding: .utf8)
        #expect(leases.contains("ipv6Leases") && leases.contains("fd00:90::3"), "\(leases)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func anIPv6OnlyServerLeasesIPv6AloneAndTheClientBlackholesIPv4() async throws {
        let vpn = try VPNLab(dualStack: true)
        defer { vpn.cleanup() }
        // The server's own IPv6 address chosen with --tun-address instead of the one below the pool.
        try await vpn.startServer(pushRoutes: false, ipv4: false, arguments: ["--tun-address", "fd00:90::ff"])
        #expect(vpn.serverProcess?.outputSoFar.contains("IPv6 server fd00:90::ff, IPv6 pool fd00:90::2-fd00:90::3") == true,
                "\(vpn.serverProcess?.outputSoFar ?? "")")
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, index: 1, device: "stun1")
        let status = await ClientHintsTests.status(at: vpn.controlPath("stun1"))
        #expect(status?.lease == "fd00:90::2/128 on stun1", "\(String(describing: status))")
        let addresses4 = try vpn.lab.run(in: client, ["ip", "-4", "addr", "show", "dev", "stun1"]).standardOutput
        #expect(addresses4.isEmpty, "\(addresses4)")
        // IPv4 cannot leak around an IPv6-only tunnel; IPv6 goes through it.
        let routes4 = try vpn.lab.run(in: client, ["ip", "-4", "route"]).standardOutput
        #expect(routes4.contains("blackhole 0.0.0.0/1") && routes4.contains("blackhole 128.0.0.0/1"), "\(routes4)")
        let ping = try vpn.lab.run(in: client, ["ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "fd00:2::2"], check: false)
        #expect(ping.status == 0, "ping -6 failed: \(ping.standardOutput)\(ping.standardError)\n\(process.outputSoFar)")
        // The client's link keeps the server's MTU, pushed in the IPv6 dictionary.
        let link = try vpn.lab.run(in: client, ["ip", "link", "show", "dev", "stun1"]).standardOutput
        #expect(link.contains("mtu 1300"), "\(link)")
        // Stopped through its control socket, the client removes what it added.
        _ = try await ControlClient.request("stop", path: vpn.controlPath("stun1"), group: MultiThreadedEventLoopGroup.singleton)
        let finished = await process.finish(timeout: 20)
        #expect(finished.status == 0 && !finished.output.contains("could not undo"), "\(finished.output)")
        let after = try vpn.lab.run(in: client, ["ip", "-4", "route"]).standardOutput
        #expect(!after.contains("blackhole"), "\(after)\n\(finished.output)")

        // A tunnel MTU IPv6 cannot use is refused with what to change.
        let small = try await vpn.startClient(in: client, index: 1, device: "stun1", expectUp: false, arguments: ["--mtu", "1200"])
        let refused = await small.finish(timeout: 20)
        #expect(refused.status != 0)
        #expect(refused.output.contains("needs an MTU of at least 1280, not 1200; raise --mtu"), "\(refused.output)")
    }
}
