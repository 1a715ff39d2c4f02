import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A server and a client on loopback, with real destination sockets.
struct TunnelFixture {
    let group: MultiThreadedEventLoopGroup
    let server: TunnelServer
    let client: TunnelClientConnection
    let echo: Channel

    var echoPort: Int { echo.localAddress?.port ?? 0 }

    static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = ProcessInfo.processInfo.environment["TUNNEL_TEST_LOG"] == nil ? .critical : .trace
        return logger
    }()

    static func start(tls: Bool = true, configure: (inout TunnelServer.Settings) -> Void = { _ in }) async throws -> TunnelFixture {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var settings = TunnelServer.Settings()
        settings.port = 0
        var clientTLS: TLSContext?
        if tls {
            let directory = NSTemporaryDirectory() + "tunnel-test-\(UUID().uuidString)"
            let identity = try SelfSignedIdentity.loadOrCreate(directory: directory)
            settings.tls = try TLSContext(configuration: identity.serverConfiguration())
            clientTLS = try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint])))
        }
        configure(&settings)
        let server = try await TunnelServer.start(settings: settings, group: group, logger: logger)
        let client = try await TunnelClientConnection.connect(
            settings: .init(host: "127.0.0.1", port: server.localAddress.port ?? 0, tls: clientTLS),
            group: group, logger: logger
        )
        let echo = try await LoopbackPeers.echoServer(group: group)
        return TunnelFixture(group: group, server: server, client: client, echo: echo)
    }

    func forward(to port: Int? = nil) async throws -> LocalListener {
        try await TCPPortForwarder.start(
            bindHost: "127.0.0.1", bindPort: 0,
            destination: TunnelEndpoint(host: "127.0.0.1", port: port ?? echoPort),
            tunnel: client, logger: Self.logger
        )
    }

    func stop() async {
        await client.close()
        await server.shutdown()
        try? await echo.close()
        try? await group.shutdownGracefully()
    }
}

@Suite("Tunnel end to end", .timeLimit(.minutes(3)))
struct TunnelEndToEndTests {
    @Test(arguments: [1, 1000, 70_000, 4 * 1024 * 1024])
    func echoThroughAForwardKeepsEveryByte(size: Int) async throws {
        let fixture = try await TunnelFixture.start()
        let forwarder = try await fixture.forward()
        let payload = LoopbackPeers.payload(size)
        let echoed = try await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group)
        #expect(echoed.readableBytes == size)
        #expect(echoed == payload)
        await forwarder.close()
        await fixture.stop()
    }

    @Test func plaintextTunnelWorksToo() async throws {
        let fixture = try await TunnelFixture.start(tls: false)
        let forwarder = try await fixture.forward()
        let payload = LoopbackPeers.payload(100_000)
        let echoed = try await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group)
        #expect(echoed == payload)
        await fixture.stop()
    }

    @Test func clientFetchesTheServerConfiguration() async throws {
        let fixture = try await TunnelFixture.start { settings in
            settings.clientConfiguration = ["DNS": .dictionary(["Servers": .array([.string("10.0.0.53")])])]
        }
        #expect(fixture.client.serverConfiguration["DNS"]?.dictionaryValue?["Servers"] == .array([.string("10.0.0.53")]))
        await fixture.stop()
    }
}
