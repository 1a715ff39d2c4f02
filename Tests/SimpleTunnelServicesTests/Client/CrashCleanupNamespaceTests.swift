import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A `tunnel-client ip` killed with SIGKILL leaves its routes, blackholes and
/// kill switch behind; `tunnel-client cleanup`, or the next start, removes them.
@Suite("Crash cleanup in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct CrashCleanupNamespaceTests {
    /// What a full tunnel puts outside its device, as seen in the client's namespace.
    struct Leftovers: Equatable {
        var killSwitch: Bool
        var blackhole: Bool
        var serverRoute: Bool

        static let none = Leftovers(killSwitch: false, blackhole: false, serverRoute: false)
        static let all = Leftovers(killSwitch: true, blackhole: true, serverRoute: true)
    }

    func leftovers(in namespace: String, of vpn: VPNLab) throws -> Leftovers {
        let tables = try vpn.lab.run(in: namespace, ["nft", "list", "tables"]).standardOutput
        let ipv6 = try vpn.lab.run(in: namespace, ["ip", "-6", "route", "show", "table", "all"]).standardOutput
        let routes = try vpn.lab.run(in: namespace, ["ip", "route"]).standardOutput
        return Leftovers(
            killSwitch: tables.contains("simpletunnel_client"), blackhole: ipv6.contains("blackhole"),
            serverRoute: routes.contains("198.18.11.1 dev uplink") || routes.contains("198.18.11.1 via"))
    }

    func journals(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix("undo-") }
    }

    func cleanup(in namespace: String, folder: String, of vpn: VPNLab) async throws -> (status: Int32, output: String) {
        let process = try vpn.lab.start(in: namespace, [BuiltPrograms.tunnelClient, "cleanup", "--state-directory", folder])
        return await process.finish(timeout: 30)
    }

    @Test(.enabled(if: KillSwitchNamespaceTests.isAvailable, "needs root, /dev/net/tun, ip netns and nft"))
    func aKilledClientsLeftoversAreRemovedByCleanupAndByTheNextStart() async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        try await vpn.startServer(pushRoutes: false)
        let namespace = try vpn.clientNamespace(1)
        let state = vpn.directory + "/client-state"
        let first = try await vpn.startClient(in: namespace, serverAddress: "198.18.11.1", device: "stun1", arguments: ["--state-directory", state])
        #expect(try leftovers(in: namespace, of: vpn) == .all, "\(first.outputSoFar)")
        #expect(journals(in: state).count == 1, "\(journals(in: state))")

        // A running client's record is not touched.
        let whileRunning = try await cleanup(in: namespace, folder: state, of: vpn)
        #expect(whileRunning.status == 0, "\(whileRunning.output)")
        #expect(whileRunning.output.contains("still runs"), "\(whileRunning.output)")
        #expect(try leftovers(in: namespace, of: vpn) == .all)

        // SIGKILL: no chance to undo anything, and the kill switch still drops what would leak.
        kill(first.processIdentifier, SIGKILL)
        _ = await first.finish(timeout: 20)
        #expect(try leftovers(in: namespace, of: vpn) == .all, "a SIGKILL took something with it; the test shows nothing")
        let cleaned = try await cleanup(in: namespace, folder: state, of: vpn)
        #expect(cleaned.status == 0, "\(cleaned.output)")
        #expect(cleaned.output.contains("removed what tunnel-client (pid \(first.processIdentifier)) left behind"), "\(cleaned.output)")
        #expect(try leftovers(in: namespace, of: vpn) == .none, "\(cleaned.output)")
        #expect(journals(in: state).isEmpty, "\(journals(in: state))")
        let again = try await cleanup(in: namespace, folder: state, of: vpn)
        #expect(again.output.contains("nothing to clean up"), "\(again.output)")

        // Killed again, then simply started again: the new client removes the old one's leftovers first.
        let second = try await vpn.startClient(in: namespace, serverAddress: "198.18.11.1", device: "stun1", arguments: ["--state-directory", state])
        kill(second.processIdentifier, SIGKILL)
        _ = await second.finish(timeout: 20)
        let third = try await vpn.startClient(in: namespace, serverAddress: "198.18.11.1", device: "stun1", arguments: ["--state-directory", state])
        #expect(third.outputSoFar.contains("removed what a previous tunnel-client (pid \(second.processIdentifier)) left behind"), "\(third.outputSoFar)")
        let ping = try vpn.lab.run(in: namespace, ["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"], check: false)
        #expect(ping.status == 0, "ping through the new tunnel failed: \(ping.standardOutput)\n\(third.outputSoFar)")
        _ = try await ControlClient.request("stop", path: vpn.controlPath("stun1"), group: MultiThreadedEventLoopGroup.singleton)
        let result = await third.finish(timeout: 20)
        #expect(result.status == 0, "\(result.output)")
        #expect(try leftovers(in: namespace, of: vpn) == .none, "\(result.output)")
        #expect(journals(in: state).isEmpty, "a clean stop left its record: \(journals(in: state))")
    }
}
