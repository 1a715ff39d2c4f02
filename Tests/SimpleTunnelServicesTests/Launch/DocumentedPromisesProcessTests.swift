import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOTLS
import Testing
@testable import SimpleTunnelServices

/// What the README and `--help` promise of the built programs, each kept by a test.
@Suite("The built programs keep what their documentation promises", .timeLimit(.minutes(3)))
struct DocumentedPromisesProcessTests {
    let directory = NSTemporaryDirectory() + "promises-\(UUID().uuidString.prefix(8))"

    func started(_ server: ExternalProcess) async throws -> Int {
        let output = try #require(await server.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30), "\(server.outputSoFar)")
        return try #require(output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
    }

    @Test func applesPositionalFormIsPortThenConfigurationFile() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/config.plist"
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>DNS</key><dict><key>Servers</key><array><string>10.90.0.1</string></array></dict>
            <key>Proxies</key><dict><key>HTTPEnable</key><integer>0</integer></dict></dict></plist>
            """.utf8
        ).write(to: URL(fileURLWithPath: path))
        // As Apple's tunnel_server is started: `tunnel_server <port> <config-file>`.
        let server = try ExternalProcess([BuiltPrograms.tunnelServer, "0", path, "--plaintext", "--no-ip-layer", "--state-directory", directory])
        defer { server.terminate() }
        let port = try await started(server)
        let peer = try await RawTunnelPeer.connect(port: port, group: MultiThreadedEventLoopGroup.singleton, sending: .fetchConfiguration(identifier: 0))
        guard case .fetchConfiguration(0, let configuration?) = await peer.next() else {
            Issue.record("no configuration answered")
            return
        }
        #expect(configuration["Proxies"] != nil, "the file named second is the configuration served")
        await peer.close()
    }

    @Test func sigtermEndsEveryTunnelWithCloseNotifyAndExitsCleanly() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let identity = try SelfSignedIdentity.loadOrCreate(directory: directory + "/state")
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--no-ip-layer", "--state-directory", directory + "/state",
            "--control", directory + "/server.sock",
        ])
        defer { server.terminate() }
        let port = try await started(server)
        let tls = try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint])))
        let ending = TLSEndingRecorder()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(context: tls, serverName: "localhost", logger: TunnelFixture.logger))
                    try channel.pipeline.syncOperations.addTunnelMessageCodec()
                    try channel.pipeline.syncOperations.addHandler(ending)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        try await channel.writeAndFlush(TunnelMessage.fetchConfiguration(identifier: 0))
        #expect(await AdmissionPeers.eventually { ending.answered })
        kill(server.processIdentifier, SIGTERM)
        #expect(await AdmissionPeers.eventually { !channel.isActive })
        #expect(ending.cleanShutdown, "no close_notify before the connection ended")
        #expect(ending.errors.isEmpty, "\(ending.errors)")
        let exit = await server.finish(timeout: 20)
        #expect(exit.status == 0, "\(exit.output)")
    }

    @Test func theClientsStatusAsJSONAndItsKeepaliveOff() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fixture = try await RawServerFixture.start()
        defer { Task { await fixture.stop() } }
        func client(keepalive: String, control: String) async throws -> ExternalProcess {
            try ExternalProcess([
                BuiltPrograms.tunnelClient, "socks", "--server", "127.0.0.1:\(fixture.port)", "--plaintext",
                "--listen", "127.0.0.1:\(try await ClientHintsTests.freePort())",
                "--keepalive", keepalive, "--control", control,
            ])
        }
        // A probe is a fetchConfiguration the client sends on its own: with 0.3 s they come, with 0 none do.
        let probing = try await client(keepalive: "0.3", control: directory + "/probing.sock")
        defer { probing.terminate() }
        let silent = try await client(keepalive: "0", control: directory + "/silent.sock")
        defer { silent.terminate() }
        for (process, control) in [(probing, "/probing.sock"), (silent, "/silent.sock")] {
            var connected = false
            for _ in 0..<100 where !connected && process.isRunning {
                let status = try await ExternalProcess([BuiltPrograms.tunnelClient, "status", "--json", "--control", directory + control]).finish()
                if status.status == 0, let decoded = try? JSONDecoder().decode(TunnelClientStatus.self, from: Data(status.output.utf8)) {
                    connected = decoded.state == .connected && decoded.server == "127.0.0.1:\(fixture.port)"
                }
                if !connected { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(connected, "status --json never said connected:\n\(process.outputSoFar)")
        }
        try await Task.sleep(for: .seconds(2))
        let probed = try await ExternalProcess([BuiltPrograms.tunnelClient, "status", "--json", "--control", directory + "/probing.sock"]).finish()
        let quiet = try await ExternalProcess([BuiltPrograms.tunnelClient, "status", "--json", "--control", directory + "/silent.sock"]).finish()
        let probedStatus = try JSONDecoder().decode(TunnelClientStatus.self, from: Data(probed.output.utf8))
        let quietStatus = try JSONDecoder().decode(TunnelClientStatus.self, from: Data(quiet.output.utf8))
        #expect(probedStatus.roundTripMilliseconds != nil, "a probing client measures the round trip")
        #expect(quietStatus.roundTripMilliseconds == nil, "--keepalive 0 sent a probe")
        #expect(quietStatus.bytesSent == 0 && quietStatus.state == .connected)
    }

    @Test func idleTimeoutZeroMeansNever() throws {
        var options = TunnelServerLaunchOptions.none
        options.plaintext = true
        options.idleTimeout = .zero
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).settings.liveness.idleTimeout == nil)
        options.idleTimeout = .seconds(30)
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).settings.liveness.idleTimeout == .seconds(30))
    }
}

/// How a TLS connection ended: with the peer's close_notify, or not.
final class TLSEndingRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = TunnelInboundMessage
    private let state = NIOLockedValueBox((answered: false, clean: false, errors: [String]()))

    var answered: Bool { state.withLockedValue { $0.answered } }
    var cleanShutdown: Bool { state.withLockedValue { $0.clean } }
    var errors: [String] { state.withLockedValue { $0.errors } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        state.withLockedValue { $0.answered = true }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.shutdownCompleted = event {
            state.withLockedValue { $0.clean = true }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        state.withLockedValue { $0.errors.append("\(error)") }
    }
}
