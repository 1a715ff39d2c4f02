import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Client control socket", .timeLimit(.minutes(2)))
struct ControlSocketTests {
    struct Running {
        let fixture: RawServerFixture
        let service: TunnelClientService
        let task: Task<Void, Error>
        let path: String
    }

    /// A client service (no listeners) with its control socket, connected to a plaintext test server.
    static func start() async throws -> Running {
        let fixture = try await RawServerFixture.start()
        let path = NSTemporaryDirectory() + "control-\(UUID().uuidString.prefix(8))/client.sock"
        let service = TunnelClientService(
            settings: .init(host: "127.0.0.1", port: fixture.port, tls: nil), group: fixture.group,
            logger: TunnelFixture.logger, controlPath: path
        ) { _, _ in [] }
        let task = Task { try await service.run() }
        for _ in 0..<200 where service.status.state != .connected {
            try await Task.sleep(for: .milliseconds(20))
        }
        return Running(fixture: fixture, service: service, task: task, path: path)
    }

    /// Sends raw bytes to the control socket; returns what comes back before it closes.
    static func raw(_ bytes: ByteBuffer, path: String, group: EventLoopGroup) async throws -> ByteBuffer {
        let collector = CollectingHandler()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(unixDomainSocketPath: path)
            .get()
        let received = collector.promise(on: channel.eventLoop)
        try await channel.writeAndFlush(bytes)
        return try await received.get()
    }

    @Test func statusReportsTheConnectionAndStopEndsTheClient() async throws {
        let running = try await Self.start()
        let response = try await ControlClient.request("status", path: running.path, group: running.fixture.group)
        #expect(response.ok)
        #expect(response.status?.state == .connected)
        #expect(response.status?.server == "127.0.0.1:\(running.fixture.port)")
        #expect(response.status?.uptimeSeconds != nil)

        let attributes = try FileManager.default.attributesOfItem(atPath: running.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let stop = try await ControlClient.request("stop", path: running.path, group: running.fixture.group)
        #expect(stop.ok)
        try await running.task.value
        #expect(running.service.status.state == .disconnected)
        #expect(!FileManager.default.fileExists(atPath: running.path))
        await running.fixture.stop()
    }

    @Test func malformedRequestsAreAnsweredWithAnErrorAndTheClientCarriesOn() async throws {
        let running = try await Self.start()
        let group = running.fixture.group
        for payload in ["not json", "{\"kind\": \"status\"}", "{\"type\": \"reboot\"}", "[]"] {
            let answer = try await Self.raw(ControlProtocol.frame(Data(payload.utf8)), path: running.path, group: group)
            var body = answer
            body.moveReaderIndex(forwardBy: 4)
            let response = try JSONDecoder().decode(ControlProtocol.Response.self, from: Data(body.readableBytesView))
            #expect(!response.ok && response.error != nil, "\(payload)")
        }
        // A length over the limit is cut off without an answer.
        var huge = ByteBuffer()
        huge.writeInteger(UInt32(ControlProtocol.maximumMessageLength + 1), endianness: .big)
        #expect(try await Self.raw(huge, path: running.path, group: group).readableBytes == 0)

        #expect(try await ControlClient.request("status", path: running.path, group: group).status?.state == .connected)
        _ = try await ControlClient.request("stop", path: running.path, group: group)
        try await running.task.value
        await running.fixture.stop()
    }

    @Test(.enabled(if: TestRequirements.met(geteuid() == 0 && ExternalProcess.isPythonAvailable, "root and python3"), "needs root to act as another user"))
    func anotherUserIsRefused() async throws {
        let running = try await Self.start()
        // Open the folder and socket to everyone, so only the peer-credential check stands in the way.
        chmod((running.path as NSString).deletingLastPathComponent, 0o777)
        chmod(running.path, 0o666)
        let script = """
            import os, socket, struct, sys
            os.setgid(65534); os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(5)
            s.connect(sys.argv[1])
            body = b'{"type": "status"}'
            try:
                s.sendall(struct.pack('>I', len(body)) + body)
                print('answered' if s.recv(4) else 'refused')
            except (ConnectionResetError, BrokenPipeError):
                print('refused')
            """
        let result = await (try ExternalProcess(["python3", "-c", script, running.path])).finish()
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "refused", "\(result.output)")
        _ = try await ControlClient.request("stop", path: running.path, group: running.fixture.group)
        try await running.task.value
        await running.fixture.stop()
    }
}
