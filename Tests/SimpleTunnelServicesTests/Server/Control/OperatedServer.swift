import Foundation
import Logging
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// An in-process server with a users file and a control socket on loopback,
/// as an operator runs it: clients log in, the operator asks and reloads.
struct OperatedServer {
    let fixture: RawServerFixture
    let identity: SelfSignedIdentity
    let usersFile: UsersFile
    let directory: String
    let control: ControlSocketServer
    let logger: Logger
    let log: CapturingLogHandler.Lines

    var usersPath: String { usersFile.path }

    static func start(users: [String: String]) async throws -> OperatedServer {
        let directory = NSTemporaryDirectory() + "operated-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try write(users, to: directory + "/users")
        let usersFile = try UsersFile.load(path: directory + "/users")
        let identity = try SelfSignedIdentity.loadOrCreate(directory: directory + "/identity")
        let tls = try TLSContext(configuration: identity.serverConfiguration())
        let fixture = try await RawServerFixture.start { settings in
            settings.authentication = .init(users: usersFile)
            settings.tls = tls
        }
        let (logger, log) = CapturingLogHandler.logger()
        let control = try await ServerControl.start(
            path: directory + "/run/server.sock", server: fixture.server, group: fixture.group, logger: logger)
        return OperatedServer(
            fixture: fixture, identity: identity, usersFile: usersFile, directory: directory, control: control, logger: logger, log: log)
    }

    /// What `tunnel-server passwd` writes: the whole file, mode 0600.
    static func write(_ users: [String: String], to path: String) throws {
        var database = UserDatabase()
        for (login, password) in users {
            database.set(login, hash: try PasswordHash(password: password, iterations: PasswordHash.minimumIterations))
        }
        try database.write(to: path)
    }

    func writeUsers(_ users: [String: String]) throws {
        try Self.write(users, to: usersPath)
    }

    func connect(_ login: String, _ password: String) async throws -> TunnelClientConnection {
        try await AuthenticationTests.connect(fixture, identity, login: login, password: password)
    }

    func ask(_ request: ServerControlProtocol.Request) async throws -> ServerControlProtocol.Response {
        let answer = try await ControlSocketClient.exchange(
            try JSONEncoder().encode(request), path: control.path, program: "tunnel-server", group: fixture.group)
        return try JSONDecoder().decode(ServerControlProtocol.Response.self, from: answer)
    }

    /// A local port whose connections go through `tunnel` to the echo server.
    func forward(through tunnel: TunnelClientConnection) async throws -> LocalListener {
        try await TCPPortForwarder.start(
            bindHost: "127.0.0.1", bindPort: 0, destination: TunnelEndpoint(host: "127.0.0.1", port: fixture.echoPort),
            tunnel: tunnel, logger: TunnelFixture.logger)
    }

    func echoes(through forwarder: LocalListener) async -> Bool {
        let payload = LoopbackPeers.payload(10_000)
        let echoed = try? await LoopbackPeers.exchange(payload, port: forwarder.localAddress.port ?? 0, group: fixture.group)
        return echoed == payload
    }

    func stop() async {
        await control.close()
        await fixture.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One TCP connection kept open through a forward, echoing a chunk per round:
/// bytes keep flowing on the same connection while the server reloads.
enum EchoStream {
    static func run(port: Int, group: EventLoopGroup, rounds: Int, midway: @Sendable () async -> Void) async throws -> Int {
        let channel = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var echoed = 0
            for round in 0..<rounds {
                if round == rounds / 2 { await midway() }
                let chunk = LoopbackPeers.payload(4096, seed: UInt8(round % 200))
                try await outbound.write(chunk)
                var received = 0
                while received < chunk.readableBytes, let part = try await iterator.next() {
                    received += part.readableBytes
                }
                echoed += received
            }
            return echoed
        }
    }
}
