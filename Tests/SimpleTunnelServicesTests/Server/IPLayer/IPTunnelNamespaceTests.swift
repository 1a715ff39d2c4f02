import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// The built programs, next to the test runner in the build folder.
enum BuiltPrograms {
    static let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    static var tunnelServer: String { directory.appendingPathComponent("tunnel-server").path }
    static var tunnelClient: String { directory.appendingPathComponent("tunnel-client").path }

    /// Copies of both programs that any user may run (a build folder in a
    /// fresh clone may sit below a folder only root can enter): for tests that
    /// run them as nobody. Made once per test process.
    static let forAnyUser: (tunnelServer: String, tunnelClient: String) = {
        let folder = "/tmp/simpletunnel-test-programs-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(folder, 0o755)
        for name in ["tunnel-server", "tunnel-client"] {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
            try? FileManager.default.copyItem(atPath: directory.appendingPathComponent(name).path, toPath: folder + "/" + name)
            chmod(folder + "/" + name, 0o755)
        }
        return (folder + "/tunnel-server", folder + "/tunnel-client")
    }()
}

/// A real VPN in network namespaces the test creates: a client namespace, a
/// server namespace forwarding to a destination namespace behind it.
///
///     client ns ── 198.18.1X.2 ═ 198.18.1X.1 ── server ns ── 198.18.2.1 ═ 198.18.2.2 ── destination ns
///     tunnel pool 10.90.0.2-10.90.0.3, pushed route 198.18.2.0/24
///
/// Dual stack, every link also carries IPv6 (fd00:1X::2 ═ fd00:1X::1, fd00:2::1 ═ fd00:2::2),
/// the server listens on both families and offers the pool fd00:90::2-fd00:90::3 too.
final class VPNLab {
    let lab = NetworkNamespaceLab()
    let pki: TestPKI
    let server: String
    let destination: String
    let directory: String
    let dualStack: Bool
    private(set) var serverProcess: ExternalProcess?
    /// Put before both programs' command lines, e.g. `["env", "NAME=value"]`.
    var launchPrefix: [String] = []
    /// The last address of the IPv4 pool, which starts at 10.90.0.2.
    var poolEnd = "10.90.0.3"
    /// XML put into the configuration's `Server` dictionary (`<key>Users</key>…`).
    var serverKeys = ""

    init(dualStack: Bool = false) throws {
        self.dualStack = dualStack
        pki = try TestPKI()
        directory = NSTemporaryDirectory() + "vpn-lab-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        server = try lab.makeNamespace()
        destination = try lab.makeNamespace()
        try lab.addVethPair((server, "to-dst", "198.18.2.1/24"), (destination, "to-srv", "198.18.2.2/24"))
        try lab.run(in: destination, ["ip", "route", "add", "10.90.0.0/24", "via", "198.18.2.1"])
        try lab.enableForwarding(in: server)
        if dualStack {
            try addIPv6(server, "to-dst", "fd00:2::1/64")
            try addIPv6(destination, "to-srv", "fd00:2::2/64")
            try lab.run(in: destination, ["ip", "-6", "route", "add", "fd00:90::/64", "via", "fd00:2::1"])
            try lab.run(in: server, ["sysctl", "-w", "net.ipv6.conf.all.forwarding=1"])
        }
    }

    /// Usable at once: no duplicate address detection on a link the lab alone made.
    private func addIPv6(_ namespace: String, _ device: String, _ address: String) throws {
        try lab.run(in: namespace, ["ip", "-6", "address", "add", address, "dev", device, "nodad"])
    }

    /// A client namespace linked to the server namespace on its own networks.
    func clientNamespace(_ index: Int) throws -> String {
        let namespace = try lab.makeNamespace()
        try lab.addVethPair((namespace, "uplink", "198.18.\(10 + index).2/24"), (server, "cl\(index)", "198.18.\(10 + index).1/24"))
        if dualStack {
            try addIPv6(namespace, "uplink", "fd00:\(10 + index)::2/64")
            try addIPv6(server, "cl\(index)", "fd00:\(10 + index)::1/64")
        }
        return namespace
    }

    /// - Parameters:
    ///   - pushRoutes: with, clients route only the destination networks; without, everything.
    ///   - ipv4: false leaves the IPv4 dictionary out: a dual-stack lab's server then offers IPv6 alone.
    func startServer(pushRoutes: Bool = true, ipv4: Bool = true, arguments: [String] = []) async throws {
        serverProcess = try await launchServer(pushRoutes: pushRoutes, ipv4: ipv4, arguments: arguments)
    }

    /// Starts the server (again, after `stopServer`); its leases are kept in the lab's state folder.
    func launchServer(pushRoutes: Bool = true, ipv4: Bool = true, arguments: [String] = []) async throws -> ExternalProcess {
        let path = try writeServerConfiguration(pushRoutes: pushRoutes, ipv4: ipv4)
        let host = dualStack ? "::" : "0.0.0.0"
        let process = try lab.start(in: server, launchPrefix + [
            BuiltPrograms.tunnelServer, "--host", host, "--port", "4433", "--config", path,
            "--cert", pki.certificatePath("server"), "--key", pki.keyPath("server"), "--client-ca", pki.caFile,
            "--tun", "stun0", "--mtu", "1300", "--log-level", "debug", "--state-directory", directory + "/server-state",
        ] + arguments)
        let output = await process.waitForOutput(containing: "IP layer on", timeout: 20)
        try #require(output != nil, "the server did not bring its IP layer up:\n\(process.outputSoFar)")
        _ = await process.waitForOutput(containing: "listening on \(TunnelEndpoint(host: host, port: 4433))", timeout: 20)
        return process
    }

    /// The server's configuration file, written again for a reload: `routes`
    /// are pushed IPv4 networks (ADDRESS/MASK pairs) beside the destination's,
    /// `deny` goes into `Server.Policy`.
    @discardableResult
    func writeServerConfiguration(
        pushRoutes: Bool = true, ipv4: Bool = true, routes: [(String, String)] = [], deny: [String] = []
    ) throws -> String {
        let pushed = (pushRoutes ? [("198.18.2.0", "255.255.255.0")] : []) + routes
        let routes4 = pushed.isEmpty
            ? ""
            : "<key>Routes</key><array>" + pushed.map { "<dict><key>Address</key><string>\($0.0)</string><key>Netmask</key><string>\($0.1)</string></dict>" }.joined() + "</array>"
        let routes6 = pushRoutes
            ? "<key>Routes</key><array><dict><key>Address</key><string>fd00:2::</string><key>PrefixLength</key><integer>64</integer></dict></array>"
            : ""
        let ipv4Dictionary = ipv4
            ? "<key>IPv4</key><dict><key>Pool</key><dict><key>StartAddress</key><string>10.90.0.2</string><key>EndAddress</key><string>\(poolEnd)</string></dict>\(routes4)</dict>"
            : ""
        let ipv6Dictionary = dualStack
            ? "<key>IPv6</key><dict><key>Pool</key><dict><key>StartAddress</key><string>fd00:90::2</string><key>EndAddress</key><string>fd00:90::3</string></dict>\(routes6)</dict>"
            : ""
        let policy = deny.isEmpty
            ? ""
            : "<key>Policy</key><dict><key>Deny</key><array>" + deny.map { "<string>\($0)</string>" }.joined() + "</array></dict>"
        let server = policy.isEmpty && serverKeys.isEmpty ? "" : "<key>Server</key><dict>\(policy)\(serverKeys)</dict>"
        let configuration = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
              \(ipv4Dictionary)
              \(ipv6Dictionary)
              <key>DNS</key><dict><key>Servers</key><array/></dict>
              \(server)
            </dict></plist>
            """
        let path = directory + "/server.plist"
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Stops the server as SIGTERM would (its tunnels end cleanly) and waits until it is gone.
    func stopServer() async {
        serverProcess?.terminate()
        _ = await serverProcess?.finish(timeout: 20)
        serverProcess = nil
    }

    func restartServer(pushRoutes: Bool = true) async throws {
        serverProcess = try await launchServer(pushRoutes: pushRoutes)
    }

    /// Starts `tunnel-client ip` in `namespace`; returns it once its tunnel is up (or nil with its output recorded).
    /// Each device's client has its own certificate (common name `client-DEVICE`), so its own durable lease.
    func startClient(
        in namespace: String, serverAddress: String, device: String, expectUp: Bool = true, arguments: [String] = []
    ) async throws -> ExternalProcess {
        let identity = try pki.issueClient("client-\(device)")
        let process = try lab.start(in: namespace, launchPrefix + [
            BuiltPrograms.tunnelClient, "ip", "--server", "\(serverAddress):4433", "--ca", pki.caFile,
            "--cert", pki.certificatePath(identity), "--key", pki.keyPath(identity), "--server-name", "localhost",
            "--tun", device, "--log-level", "info", "--control", controlPath(device),
        ] + (arguments.contains("--state-directory") ? [] : ["--state-directory", directory + "/client-state"]) + arguments)
        if expectUp {
            let output = await process.waitForOutput(containing: "IP tunnel up", timeout: 20)
            #expect(output != nil, "the client did not come up:\n\(process.outputSoFar)\nserver:\n\(serverProcess?.outputSoFar ?? "")")
        }
        return process
    }

    /// A dual-stack lab's client, over IPv6 to the server's address on its link.
    func startClient(in namespace: String, index: Int, device: String, expectUp: Bool = true, arguments: [String] = []) async throws -> ExternalProcess {
        try await startClient(in: namespace, serverAddress: "[fd00:\(10 + index)::1]", device: device, expectUp: expectUp, arguments: arguments)
    }

    func controlPath(_ device: String) -> String { directory + "/control-\(device).sock" }

    func cleanup() {
        lab.cleanup()
        pki.remove()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite("IP tunnel in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct IPTunnelNamespaceTests {
    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func pingAndTCPThroughTheTunnelAndSpoofedSourcesAreDropped() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer()
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")

        // The lease and the pushed route are in place.
        let addresses = try vpn.lab.run(in: client, ["ip", "-4", "addr", "show", "dev", "stun1"]).standardOutput
        #expect(addresses.contains("10.90.0.2"), "\(addresses)")
        let routes = try vpn.lab.run(in: client, ["ip", "route"]).standardOutput
        #expect(routes.contains("198.18.2.0/24 dev stun1"), "\(routes)")
        // The client took the server's --mtu with its lease.
        let link = try vpn.lab.run(in: client, ["ip", "link", "show", "dev", "stun1"]).standardOutput
        #expect(link.contains("mtu 1300"), "\(link)")

        // Ping through the tunnel to the destination behind the server.
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping failed: \(ping.standardOutput)\(ping.standardError)\n\(process.outputSoFar)")
        // A split tunnel still reaches the server's own tunnel address, where a VPN's DNS often lives.
        let server = try vpn.lab.run(in: client, ["ping", "-c", "1", "-W", "2", "10.90.0.1"], check: false)
        #expect(server.status == 0, "the server's tunnel address is unreachable: \(server.standardOutput)\(server.standardError)")

        // A TCP transfer with a checksum, from a web server in the destination namespace.
        let content = directory(for: vpn, bytes: 3 * 1024 * 1024)
        let web = try vpn.lab.start(in: vpn.destination, ["python3", "-u", "-m", "http.server", "8080", "--bind", "198.18.2.2", "--directory", content])
        _ = await web.waitForOutput(containing: "Serving", timeout: 10)
        let sums = try vpn.lab.run(in: client, ["sh", "-c", "curl -s --max-time 30 http://198.18.2.2:8080/blob | sha256sum"], timeout: .seconds(40)).standardOutput
        let expected = try vpn.lab.runner.runChecked(["sha256sum", content + "/blob"]).standardOutput
        #expect(sums.prefix(64) == expected.prefix(64))

        // A source address that is not the lease is dropped by the server and counted in its log.
        try vpn.lab.run(in: client, ["ip", "addr", "add", "10.90.0.99/32", "dev", "stun1"])
        let spoofed = try vpn.lab.run(in: client, ["ping", "-c", "2", "-W", "1", "-I", "10.90.0.99", "198.18.2.2"], check: false)
        #expect(spoofed.status != 0)
        let serverLog = await vpn.serverProcess?.waitForOutput(containing: "whose source is not the lease", timeout: 10)
        #expect(serverLog != nil, "the server did not report spoofed packets")
        _ = process
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aPoolAroundTheServersAddressIsOneDeviceRouteAndRepliesComeBackThroughIt() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        vpn.poolEnd = "10.90.0.254"
        try await vpn.startServer()
        // One /24 on the device although the server's own 10.90.0.1 is in it: the kernel delivers to it first.
        let serverRoutes = try vpn.lab.run(in: vpn.server, ["ip", "route", "show", "dev", "stun0"]).standardOutput
        #expect(serverRoutes.split(separator: "\n").map { $0.split(separator: " ").first } == ["10.90.0.0/24"], "\(serverRoutes)")
        #expect(vpn.serverProcess?.outputSoFar.contains("clients-route=198.18.2.0/24") == true, "\(vpn.serverProcess?.outputSoFar ?? "")")
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping failed: \(ping.standardOutput)\(ping.standardError)\n\(process.outputSoFar)")
    }

    func directory(for vpn: VPNLab, bytes: Int) -> String {
        let path = vpn.directory + "/web"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let data = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        try? data.write(to: URL(fileURLWithPath: path + "/blob"))
        return path
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func withoutPushedRoutesEverythingGoesThroughTheTunnelAndIPv6IsBlackholed() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")
        let routes = try vpn.lab.run(in: client, ["ip", "route"]).standardOutput
        #expect(routes.contains("0.0.0.0/1 dev stun1"), "\(routes)")
        #expect(routes.contains("128.0.0.0/1 dev stun1"), "\(routes)")
        // The tunnel's own connection keeps its way to the server outside the tunnel.
        #expect(routes.contains("198.18.11.1 dev uplink"), "\(routes)")
        let ipv6 = try vpn.lab.run(in: client, ["ip", "-6", "route", "show", "table", "all"]).standardOutput
        #expect(ipv6.contains("blackhole ::/1") && ipv6.contains("blackhole 8000::/1"), "\(ipv6)")
        let ping = try vpn.lab.run(in: client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping failed: \(ping.standardOutput)\n\(process.outputSoFar)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func twoClientsAnExhaustedPoolAndALeaseReusedAfterDisconnect() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer()
        let first = try vpn.clientNamespace(1)
        let second = try vpn.clientNamespace(2)
        let third = try vpn.clientNamespace(3)
        let one = try await vpn.startClient(in: first, serverAddress: "198.18.11.1", device: "stun1")
        _ = try await vpn.startClient(in: second, serverAddress: "198.18.12.1", device: "stun2")

        // Both clients at once.
        for namespace in [first, second] {
            let ping = try vpn.lab.run(in: namespace, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
            #expect(ping.status == 0, "ping from \(namespace) failed")
        }

        // The pool holds two addresses: a third client is refused with result 3.
        let refused = try await vpn.startClient(in: third, serverAddress: "198.18.13.1", device: "stun3", expectUp: false)
        let result = await refused.finish(timeout: 20)
        #expect(result.status != 0)
        #expect(result.output.contains("refused"), "\(result.output)")

        // The server's log says who has which address.
        #expect(vpn.serverProcess?.outputSoFar.contains("leased 10.90.0.2") == true, "\(vpn.serverProcess?.outputSoFar ?? "")")
        #expect(vpn.serverProcess?.outputSoFar.contains("CN=client-stun1") == true)

        // When the first client goes away its lease (the lowest) is free again, and the log says so.
        one.terminate()
        #expect(await vpn.serverProcess?.waitForOutput(containing: "released 10.90.0.2", timeout: 10) != nil, "\(vpn.serverProcess?.outputSoFar ?? "")")
        _ = try await vpn.startClient(in: third, serverAddress: "198.18.13.1", device: "stun3")
        let addresses = try vpn.lab.run(in: third, ["ip", "-4", "addr", "show", "dev", "stun3"]).standardOutput
        #expect(addresses.contains("10.90.0.2"), "\(addresses)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aClientAgainstAServerWithoutAnIPLayerIsToldHowToStartOne() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        // As the README's first run starts it: no --tun, no pool, so no IP layer.
        let server = try vpn.lab.start(in: vpn.server, [
            BuiltPrograms.tunnelServer, "--host", "0.0.0.0", "--port", "4433",
            "--cert", vpn.pki.certificatePath("server"), "--key", vpn.pki.keyPath("server"), "--client-ca", vpn.pki.caFile,
            "--state-directory", vpn.directory + "/server-state",
        ])
        defer { server.terminate() }
        // The listener's own line (the policy note also says "listening on 0.0.0.0, so …").
        #expect(await server.waitForOutput(containing: "listening on 0.0.0.0:4433", timeout: 20) != nil, "\(server.outputSoFar)")
        #expect(server.outputSoFar.contains("no IP layer"), "\(server.outputSoFar)")
        let namespace = try vpn.clientNamespace(1)
        let client = try await vpn.startClient(in: namespace, serverAddress: "198.18.11.1", device: "stun1", expectUp: false)
        let result = await client.finish(timeout: 20)
        #expect(result.status != 0)
        #expect(result.output.contains("the server has no IP layer"), "\(result.output)")
        #expect(result.output.contains("start it with --tun"), "\(result.output)")
        // The client removed the device it made for the tunnel.
        let links = try vpn.lab.run(in: namespace, ["ip", "link", "show"]).standardOutput
        #expect(!links.contains("stun1"), "\(links)")
    }

    /// Asks a client's control socket until its state is `state`; records the states seen.
    func waitForState(_ state: TunnelClientState, control: String, seen: inout [TunnelClientState], timeout: Int = 30) async -> TunnelClientStatus? {
        for _ in 0..<(timeout * 10) {
            if let status = try? await ControlClient.request("status", path: control, group: MultiThreadedEventLoopGroup.singleton).status {
                if seen.last != status.state { seen.append(status.state) }
                if status.state == state { return status }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// Starts the server and two clients; ours (`stun2`) gets the second address,
    /// because the other (returned as `first`) took the lowest.
    func secondClient(
        of vpn: VPNLab, pushRoutes: Bool, seen: inout [TunnelClientState]
    ) async throws -> (namespace: String, first: ExternalProcess, client: ExternalProcess, control: String) {
        try await vpn.startServer(pushRoutes: pushRoutes)
        let other = try vpn.clientNamespace(1)
        let mine = try vpn.clientNamespace(2)
        let first = try await vpn.startClient(in: other, serverAddress: "198.18.11.1", device: "stun1")
        let client = try await vpn.startClient(in: mine, serverAddress: "198.18.12.1", device: "stun2")
        let control = vpn.controlPath("stun2")
        let before = await waitForState(.connected, control: control, seen: &seen)
        #expect(before?.lease == "10.90.0.3/32 on stun2", "\(String(describing: before))")
        return (mine, first, client, control)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aClientReassertsAcrossAServerRestartAndGetsItsLeaseBack() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        var seen: [TunnelClientState] = []
        let (mine, first, client, control) = try await secondClient(of: vpn, pushRoutes: true, seen: &seen)

        // The other client leaves, so the lowest address is free; then the server dies.
        first.terminate()
        #expect(await vpn.serverProcess?.waitForOutput(containing: "released 10.90.0.2", timeout: 20) != nil, "the first client's lease was not released")
        await vpn.stopServer()
        let reasserting = await waitForState(.reasserting, control: control, seen: &seen)
        #expect(reasserting != nil, "the client did not notice:\n\(client.outputSoFar)")
        // Meanwhile the device keeps its address and routes: nothing for the destination leaks around the tunnel.
        let routes = try vpn.lab.run(in: mine, ["ip", "route"]).standardOutput
        #expect(routes.contains("198.18.2.0/24 dev stun2"), "\(routes)")

        // A new server process, the same lease file: the client is back, on the same address rather than the lowest free one.
        try await vpn.restartServer()
        let after = await waitForState(.connected, control: control, seen: &seen)
        #expect(after?.lease == "10.90.0.3/32 on stun2", "\(String(describing: after))\n\(client.outputSoFar)")
        #expect(after?.reconnections == 1)
        #expect(Array(seen.suffix(3)) == [.connected, .reasserting, .connected], "\(seen)")
        let addresses = try vpn.lab.run(in: mine, ["ip", "-4", "addr", "show", "dev", "stun2"]).standardOutput
        #expect(addresses.contains("10.90.0.3"), "\(addresses)")
        let ping = try vpn.lab.run(in: mine, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping after the restart failed: \(ping.standardOutput)\n\(client.outputSoFar)")
        let leases = try String(contentsOfFile: vpn.directory + "/server-state/leases.json", encoding: .utf8)
        #expect(leases.contains("subject:CN=client-stun2") && leases.contains("10.90.0.3"), "\(leases)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func aNewLeaseAfterAReconnectionIsSwappedInWhileTheFullTunnelsRoutesStay() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        var seen: [TunnelClientState] = []
        let (mine, first, client, control) = try await secondClient(of: vpn, pushRoutes: false, seen: &seen)

        // From here on, every route change in the client's namespace is recorded.
        let monitor = try vpn.lab.start(in: mine, ["ip", "monitor", "route"])
        // Recording once it reports a marker route added after it started (an unreachable route, which the checks below ignore).
        var recording = false
        for _ in 0..<100 where !recording {
            // Removed and added again each time: the kernel reports a change, not a route replaced by itself.
            _ = try vpn.lab.run(in: mine, ["ip", "route", "del", "unreachable", "198.51.100.77/32"], check: false)
            _ = try vpn.lab.run(in: mine, ["ip", "route", "add", "unreachable", "198.51.100.77/32"], check: false)
            recording = await monitor.waitForOutput(containing: "198.51.100.77", timeout: 0.2) != nil
        }
        try #require(recording, "ip monitor never reported the marker route")
        _ = try vpn.lab.run(in: mine, ["ip", "route", "del", "unreachable", "198.51.100.77/32"], check: false)
        first.terminate()
        #expect(await vpn.serverProcess?.waitForOutput(containing: "released 10.90.0.2", timeout: 20) != nil, "the first client's lease was not released")
        await vpn.stopServer()
        #expect(await waitForState(.reasserting, control: control, seen: &seen) != nil, "the client did not notice:\n\(client.outputSoFar)")
        // The server comes back without its leases: the lowest address, not ours, is what it gives.
        try FileManager.default.removeItem(atPath: vpn.directory + "/server-state/leases.json")
        try await vpn.restartServer(pushRoutes: false)
        let swapped = await client.waitForOutput(containing: "with new settings", timeout: 30)
        #expect(swapped != nil, "\(client.outputSoFar)")
        let after = await waitForState(.connected, control: control, seen: &seen)
        #expect(after?.lease == "10.90.0.2/32 on stun2", "\(String(describing: after))\n\(client.outputSoFar)")

        let addresses = try vpn.lab.run(in: mine, ["ip", "-4", "addr", "show", "dev", "stun2"]).standardOutput
        #expect(addresses.contains("10.90.0.2/32") && !addresses.contains("10.90.0.3"), "\(addresses)")
        let ping = try vpn.lab.run(in: mine, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping on the new lease failed: \(ping.standardOutput)\n\(client.outputSoFar)")
        monitor.terminate()
        let changes = await monitor.finish(timeout: 10).output
        // The routes that keep traffic in the tunnel were never taken away, not even for a moment.
        let lapses = changes.split(separator: "\n").filter {
            $0.hasPrefix("Deleted") && ($0.contains("0.0.0.0/1") || $0.contains("128.0.0.0/1") || $0.contains("blackhole"))
        }
        #expect(lapses.isEmpty, "\(changes)")
        let routes = try vpn.lab.run(in: mine, ["ip", "route"]).standardOutput
        #expect(routes.contains("0.0.0.0/1 dev stun2") && routes.contains("128.0.0.0/1 dev stun2"), "\(routes)")
        #expect(try vpn.lab.run(in: mine, ["ip", "-6", "route"]).standardOutput.contains("blackhole ::/1"))
    }

    /// The Uid line and the capability sets of every thread of `pid`.
    func credentials(of pid: Int32) throws -> (uids: String, threads: [(permitted: UInt64, effective: UInt64, ambient: UInt64)]) {
        func field(_ name: String, in text: String) -> String {
            text.split(separator: "\n").first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) } ?? ""
        }
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        let threads = tasks.compactMap { task -> (UInt64, UInt64, UInt64)? in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { return nil }
            return (UInt64(field("CapPrm", in: text), radix: 16) ?? .max, UInt64(field("CapEff", in: text), radix: 16) ?? .max,
                    UInt64(field("CapAmb", in: text), radix: 16) ?? .max)
        }
        return (field("Uid", in: status), threads.map { (permitted: $0.0, effective: $0.1, ambient: $0.2) })
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and ip netns"))
    func withRunAsBothEndsBecomeNobodyKeepingOnlyNetAdminAndStillUndoTheirSettings() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        // The state folder belongs to the user the server becomes, as a systemd StateDirectory would.
        let state = vpn.directory + "/server-state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        #expect(chown(state, 65534, 65534) == 0)
        try await vpn.startServer(pushRoutes: false, arguments: ["--run-as", "nobody"])
        let server = try #require(vpn.serverProcess)
        _ = await server.waitForOutput(containing: "running as nobody", timeout: 10)
        let namespace = try vpn.clientNamespace(1)
        let client = try await vpn.startClient(in: namespace, serverAddress: "198.18.11.1", device: "stun1", arguments: ["--run-as", "nobody", "--kill-switch", "off"])
        _ = await client.waitForOutput(containing: "running as nobody", timeout: 10)

        let netAdmin: UInt64 = 1 << 12
        for (name, process) in [("server", server), ("client", client)] {
            let (uids, threads) = try credentials(of: process.processIdentifier)
            #expect(uids.split(whereSeparator: \.isWhitespace) == ["65534", "65534", "65534", "65534"], "\(name): Uid \(uids)\n\(process.outputSoFar)")
            #expect(threads.allSatisfy { $0.permitted & ~netAdmin == 0 }, "\(name) kept more than CAP_NET_ADMIN: \(threads)")
            #expect(threads.contains { $0.effective == netAdmin && $0.ambient == netAdmin }, "\(name): no thread keeps CAP_NET_ADMIN: \(threads)")
        }
        #expect(!server.outputSoFar.contains("cannot save leases"), "\(server.outputSoFar)")
        let ping = try vpn.lab.run(in: namespace, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping failed: \(ping.standardOutput)\n\(client.outputSoFar)")

        // Stopped through its control socket, the unprivileged client still removes what it added outside its device.
        _ = try await ControlClient.request("stop", path: vpn.controlPath("stun1"), group: MultiThreadedEventLoopGroup.singleton)
        let result = await client.finish(timeout: 20)
        #expect(result.status == 0, "\(result.output)")
        #expect(!result.output.contains("could not undo"), "\(result.output)")
        let routes = try vpn.lab.run(in: namespace, ["ip", "route"]).standardOutput
        #expect(!routes.contains("198.18.11.1 dev uplink"), "the pinned route to the server stayed: \(routes)")
        let ipv6 = try vpn.lab.run(in: namespace, ["ip", "-6", "route", "show", "table", "all"]).standardOutput
        #expect(!ipv6.contains("blackhole"), "\(ipv6)")
    }
}
