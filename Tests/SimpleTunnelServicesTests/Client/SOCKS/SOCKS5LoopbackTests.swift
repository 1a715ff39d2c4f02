import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
@testable import SimpleTunnelServices

/// Real clients through the SOCKS handler over loopback sockets, to a tiny
/// HTTP responder reached by a direct connection that `onRequest` glues on:
/// proves the handler hands the connection over cleanly, leftover included.
@Suite("SOCKS5 over loopback", .timeLimit(.minutes(2)))
struct SOCKS5LoopbackTests {
    @Test func curlFetchesThroughTheProxyByAddressAndByName() async throws {
        try await withProxy { proxy in
            let output = try await Self.run(
                "/usr/bin/curl",
                ["-sS", "--max-time", "10", "--socks5-hostname", "127.0.0.1:\(proxy.socksPort)",
                 "http://127.0.0.1:\(proxy.httpPort)/by-address", "http://localhost:\(proxy.httpPort)/by-name"]
            )
            #expect(output == "hello /by-address\nhello /by-name\n")
            let requests = proxy.requests.all
            #expect(requests.count == 2)
            #expect(requests.contains(.connect(TunnelEndpoint(host: "localhost", port: proxy.httpPort))))
        }
    }

    @Test func dataPipelinedAfterTheRequestReachesTheServer() async throws {
        try await withProxy { proxy in
            // Greeting, CONNECT and the HTTP request in one send; then read to EOF.
            let script = """
                import socket, sys
                s = socket.create_connection(("127.0.0.1", \(proxy.socksPort)), timeout=10)
                s.sendall(bytes([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1]) + (\(proxy.httpPort)).to_bytes(2, "big")
                          + b"GET /pipelined HTTP/1.1\\r\\nHost: test\\r\\n\\r\\n")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk: break
                    data += chunk
                sys.stdout.buffer.write(data)
                """
            let output = try await ExternalPropertyListReaders.runPython(script, input: Data())
            let bytes = [UInt8](output)
            #expect(bytes.prefix(2) == [0x05, 0x00])
            #expect(bytes.dropFirst(2).prefix(4) == [0x05, 0x00, 0x00, 0x01])
            #expect(bytes.dropFirst(2).dropFirst(4).prefix(4) == [127, 0, 0, 1])
            #expect(String(decoding: bytes.dropFirst(12), as: UTF8.self).hasSuffix("\r\n\r\nhello /pipelined\n"))
        }
    }

    @Test func aRefusedDestinationGetsConnectionRefused() async throws {
        try await withProxy { proxy in
            // A port nothing listens on: bind one, note it, close it.
            let closedPort = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: 0).flatMap { channel in
                    let port = channel.localAddress?.port ?? 0
                    return channel.close().map { port }
                }.get()
            let script = """
                import socket, sys
                s = socket.create_connection(("127.0.0.1", \(proxy.socksPort)), timeout=10)
                s.sendall(bytes([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1]) + (\(closedPort)).to_bytes(2, "big"))
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk: break
                    data += chunk
                sys.stdout.buffer.write(data)
                """
            let output = try await ExternalPropertyListReaders.runPython(script, input: Data())
            #expect([UInt8](output) == [0x05, 0x00, 0x05, 0x05, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        }
    }

    // MARK: Fixture

    struct Proxy {
        let socksPort: Int
        let httpPort: Int
        let requests: RequestLog
    }

    /// The requests the SOCKS handler delivered, from the event loop thread.
    final class RequestLog: Sendable {
        private let requests = Mutex<[SOCKS5Request]>([])
        func append(_ request: SOCKS5Request) { requests.withLock { $0.append(request) } }
        var all: [SOCKS5Request] { requests.withLock { $0 } }
    }

    /// Runs `body` against a SOCKS server and an HTTP responder, both on
    /// 127.0.0.1, closing both whatever happens.
    private func withProxy(_ body: (Proxy) async throws -> Void) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let http = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(TinyHTTPResponder()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let requests = RequestLog()
        let socks: Channel
        do {
            socks = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = SOCKS5ServerHandler(handshakeTimeout: .seconds(10)) { request, channel in
                            requests.append(request)
                            return Self.connectDirectly(request, from: channel)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await http.close()
            throw error
        }
        let outcome: Result<Void, any Error>
        do {
            let socksPort = try #require(socks.localAddress?.port)
            let httpPort = try #require(http.localAddress?.port)
            try await body(Proxy(socksPort: socksPort, httpPort: httpPort, requests: requests))
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try? await socks.close()
        try? await http.close()
        try outcome.get()
    }

    /// What the tunnel would do, done directly and only to loopback.
    private static func connectDirectly(_ request: SOCKS5Request, from client: Channel) -> EventLoopFuture<SOCKS5Outcome> {
        guard case .connect(let endpoint) = request, ["127.0.0.1", "localhost"].contains(endpoint.host) else {
            return client.eventLoop.makeSucceededFuture(.failure(.connectionNotAllowed))
        }
        return ClientBootstrap(group: client.eventLoop)
            .connect(host: "127.0.0.1", port: endpoint.port)
            .flatMapThrowing { server in
                let (clientSide, serverSide) = TestSocketGlue.pair()
                try client.pipeline.syncOperations.addHandler(clientSide)
                try server.pipeline.syncOperations.addHandler(serverSide)
                return SOCKS5Outcome(reply: .succeeded, boundAddress: server.localAddress)
            }
            .flatMapErrorThrowing { _ in .failure(.connectionRefused) }
    }

    /// Runs a program with a bare environment (no proxy variables); returns
    /// its standard output, or throws with its standard error.
    private static func run(_ executable: String, _ arguments: [String]) async throws -> String {
        let (status, output, errors) = try await ExternalProcess.run(executable, arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard status == 0 else {
            throw ExternalPropertyListReaders.Failure(
                description: "\(executable) exited with \(status): \(String(decoding: errors, as: UTF8.self))"
            )
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// Answers one HTTP request with "hello <path>\n", then closes.
private final class TinyHTTPResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var received = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        let text = String(buffer: received)
        guard text.contains("\r\n\r\n") else { return }
        let path = text.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        let body = "hello \(path)\n"
        let response = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
