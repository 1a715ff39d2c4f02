import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// `--server-address`: the tunnel goes to the address given, with no name
/// lookup, and the certificate is still checked against `--server`'s name.
@Suite("--server-address on loopback", .timeLimit(.minutes(2)))
struct ServerAddressTests {
    @Test func theAddressIsConnectedToAndTheNameStillNamesTheCertificate() throws {
        var options = TunnelClientLaunchOptions()
        options.server = "vpn.example.com:4433"
        options.serverAddress = "[2001:db8::7]"
        options.insecure = true
        let settings = try options.connectionSettings(environment: [:])
        #expect(settings.host == "2001:db8::7" && settings.port == 4433)
        #expect(settings.serverName == "vpn.example.com")
        options.serverAddress = "vpn.example.net"
        #expect(throws: TunnelClientLaunchError.self) { try options.connectionSettings(environment: [:]) }
    }

    @Test func aClientReachesAServerOnlyItsAddressLeadsToAndRefusesOneWhoseCertificateIsNotTheNames() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let folder = NSTemporaryDirectory() + "server-address-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // 127.0.0.2: where "localhost", the certificate's name, does not lead.
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "--host", "127.0.0.2", "--port", "0", "--cert", pki.certificatePath("server"),
            "--key", pki.keyPath("server"), "--state-directory", folder + "/state", "--control", folder + "/server.sock",
        ])
        defer { server.terminate() }
        let listening = try #require(await server.waitForOutput(containing: "listening on 127.0.0.2:", timeout: 20), "\(server.outputSoFar)")
        let line = try #require(listening.split(separator: "\n").first { $0.contains("listening on 127.0.0.2:") })
        let portText = try #require(line.split(separator: " ").first { $0.hasPrefix("127.0.0.2:") }).dropFirst("127.0.0.2:".count)
        let port = try #require(Int(portText))

        let good = try ExternalProcess([
            BuiltPrograms.tunnelClient, "config", "--server", "localhost:\(port)", "--server-address", "127.0.0.2", "--ca", pki.caFile,
            "--control", folder + "/good.sock",
        ])
        let goodResult = await good.finish(timeout: 30)
        #expect(goodResult.status == 0, "\(goodResult.output)")

        // The same address under a name the certificate does not carry (and that no resolver knows): refused.
        let bad = try ExternalProcess([
            BuiltPrograms.tunnelClient, "config", "--server", "vpn.invalid:\(port)", "--server-address", "127.0.0.2", "--ca", pki.caFile,
            "--control", folder + "/bad.sock",
        ])
        let badResult = await bad.finish(timeout: 30)
        #expect(badResult.status != 0, "\(badResult.output)")
        #expect(badResult.output.contains("vpn.invalid"), "\(badResult.output)")
        #expect(!badResult.output.contains("resolve"), "a name lookup was tried: \(badResult.output)")
    }
}
