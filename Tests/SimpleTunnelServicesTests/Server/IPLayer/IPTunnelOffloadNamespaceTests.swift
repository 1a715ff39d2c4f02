import Foundation
import Testing
@testable import SimpleTunnelServices

/// The whole VPN with the TUN devices' offloads on and super-packets carried
/// whole (the default), with offloads but MTU-sized packets on the wire
/// (`--no-super-packets`), and without offloads: TCP in both directions
/// arrives intact, and each end says which it uses. With offloads on one end
/// only, neither end agrees to super-packets, whichever offered them.
@Suite("IP tunnel with and without TUN offloads", .serialized, .timeLimit(.minutes(3)))
struct IPTunnelOffloadNamespaceTests {
    enum Mode: String, CaseIterable, Sendable {
        case superPackets, offloadsOnly, off
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"), arguments: Mode.allCases)
    func tcpBothWaysArrivesIntact(mode: Mode) async throws {
        let offloads = mode != .off
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        if !offloads { vpn.launchPrefix = ["env", "\(TUNOffloadRequest.environmentVariable)=off"] }
        try await vpn.startServer()
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(
            in: client, serverAddress: "198.18.11.1", device: "stun1", arguments: mode == .offloadsOnly ? ["--no-super-packets"] : [])
        let agreed = process.outputSoFar.contains("super-packets=agreed")
        #expect(agreed == (mode == .superPackets), "\(process.outputSoFar)")
        let expected = offloads ? "TUN offloads on stun0: checksum, TSO4, TSO6" : "TUN offloads on stun0: off"
        #expect(vpn.serverProcess?.outputSoFar.contains(expected) == true, "\(vpn.serverProcess?.outputSoFar ?? "")")
        let clientExpected = offloads ? "TUN offloads on stun1: checksum, TSO4, TSO6" : "TUN offloads on stun1: off"
        #expect(process.outputSoFar.contains(clientExpected), "\(process.outputSoFar)")

        try await Self.expectTCPBothWaysIntact(vpn, client: client, clientProcess: process)
    }

    /// One end with offloads, the other without: they must not agree on
    /// super-packets, whichever end offers them, and TCP still arrives intact.
    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"), arguments: [true, false])
    func oneEndWithoutOffloadsAgreesOnNoSuperPackets(serverHasOffloads: Bool) async throws {
        let vpn = try VPNLab()
        defer { vpn.cleanup() }
        let off = ["env", "\(TUNOffloadRequest.environmentVariable)=off"]
        vpn.launchPrefix = serverHasOffloads ? [] : off
        try await vpn.startServer()
        vpn.launchPrefix = serverHasOffloads ? off : []
        let client = try vpn.clientNamespace(1)
        let process = try await vpn.startClient(in: client, serverAddress: "198.18.11.1", device: "stun1")
        #expect(!process.outputSoFar.contains("super-packets=agreed"), "\(process.outputSoFar)")
        let serverOffloads = serverHasOffloads ? "TUN offloads on stun0: checksum, TSO4, TSO6" : "TUN offloads on stun0: off"
        let clientOffloads = serverHasOffloads ? "TUN offloads on stun1: off" : "TUN offloads on stun1: checksum, TSO4, TSO6"
        #expect(vpn.serverProcess?.outputSoFar.contains(serverOffloads) == true, "\(vpn.serverProcess?.outputSoFar ?? "")")
        #expect(process.outputSoFar.contains(clientOffloads), "\(process.outputSoFar)")
        try await Self.expectTCPBothWaysIntact(vpn, client: client, clientProcess: process)
    }

    /// Upload: the client sends to the destination behind the server; download: the destination sends to the client's lease.
    static func expectTCPBothWaysIntact(_ vpn: VPNLab, client: String, clientProcess process: ExternalProcess) async throws {
        for (from, to, address) in [(client, vpn.destination, "198.18.2.2"), (vpn.destination, client, "10.90.0.2")] {
            let sink = try vpn.lab.start(in: to, ["python3", "-c", NamespaceScripts.tcpSink, address, "5201"])
            #expect(await sink.waitForOutput(containing: "ready", timeout: 15) != nil, "\(sink.outputSoFar)")
            let source = try vpn.lab.run(in: from, ["python3", "-c", NamespaceScripts.tcpSource, address, "5201", String(6 * 1024 * 1024)], timeout: .seconds(90))
            let (_, output) = await sink.finish(timeout: 30)
            let sent = source.standardOutput.split(separator: "\n").first { $0.hasPrefix("sent ") }?.dropFirst(5)
            let received = output.split(separator: "\n").first { $0.hasPrefix("received ") }?.dropFirst(9)
            #expect(sent != nil && sent == received, "to \(address): sent \(String(describing: sent)), received \(output)\n\(process.outputSoFar)")
        }
    }
}
