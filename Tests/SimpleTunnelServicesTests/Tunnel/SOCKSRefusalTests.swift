import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A SOCKS CONNECT the server cannot carry out is answered with RFC 1928's
/// REP code, sent and flushed before the proxy closes: asked of real clients
/// (curl, and a raw socket that reads the reply) through a real tunnel.
@Suite("SOCKS refusals end to end", .timeLimit(.minutes(2)))
struct SOCKSRefusalTests {
    /// The REP byte a raw SOCKS5 client reads for a CONNECT to `host:port`, or nil if the proxy closed without one.
    static func replyCode(proxyPort: Int, host: String, port: Int) async throws -> UInt8? {
        let script = """
            import socket, struct, sys
            proxy, host, port = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
            s = socket.create_connection(("127.0.0.1", proxy), timeout=20)
            s.sendall(b"\\x05\\x01\\x00"); assert s.recv(2) == b"\\x05\\x00"
            s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(host)]) + host + struct.pack("!H", port))
            reply = b""
            while len(reply) < 10:
                chunk = s.recv(10 - len(reply))
                if not chunk: break
                reply += chunk
            print("closed" if len(reply) < 2 else "rep=%d" % reply[1])
            """
        let client = try ExternalProcess(["python3", "-c", script, "\(proxyPort)", host, "\(port)"])
        let output = await client.finish().output.trimmingCharacters(in: .whitespacesAndNewlines)
        return output.hasPrefix("rep=") ? UInt8(output.dropFirst(4)) : nil
    }

    @Test func refusedDestinationIsReplyFiveAndCurlSaysRefused() async throws {
        let fixture = try await TunnelFixture.start()
        let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: fixture.client, logger: TunnelFixture.logger)
        let port = try await DestinationServers.closedPort(group: fixture.group)
        let proxyPort = proxy.localAddress.port ?? 0

        #expect(try await Self.replyCode(proxyPort: proxyPort, host: "127.0.0.1", port: port) == SOCKS5ReplyCode.connectionRefused.rawValue)
        let curl = try ExternalProcess(["curl", "-sS", "--max-time", "20", "--socks5-hostname", "127.0.0.1:\(proxyPort)", "http://127.0.0.1:\(port)/"])
        let result = await curl.finish()
        // curl 97 is "proxy handshake error"; with the reply it shows REP 5 instead of a broken proxy.
        #expect(result.status == 97)
        #expect(result.output.contains("(5)"), "\(result.output)")
        #expect(!result.output.contains("connection to proxy closed"), "\(result.output)")
        await proxy.close()
        await fixture.stop()
    }

    @Test func destinationRefusedByPolicyIsReplyTwo() async throws {
        let policy = try DestinationPolicy(allow: [], deny: ["127.0.0.0/8"])
        let fixture = try await TunnelFixture.start { $0.opener.authorizer = policy }
        let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: fixture.client, logger: TunnelFixture.logger)
        let echo = try await LoopbackPeers.echoServer(group: fixture.group)
        let code = try await Self.replyCode(proxyPort: proxy.localAddress.port ?? 0, host: "127.0.0.1", port: echo.localAddress?.port ?? 0)
        #expect(code == SOCKS5ReplyCode.connectionNotAllowed.rawValue)
        try? await echo.close()
        await proxy.close()
        await fixture.stop()
    }

    @Test func nameThatDoesNotResolveIsReplyFour() async throws {
        // A resolver that fails every name: no DNS traffic leaves the machine.
        let fixture = try await TunnelFixture.start { $0.opener.resolver = FailingResolver() }
        let proxy = try await SOCKSProxy.start(bindHost: "127.0.0.1", bindPort: 0, tunnel: fixture.client, logger: TunnelFixture.logger)
        let code = try await Self.replyCode(proxyPort: proxy.localAddress.port ?? 0, host: "no-such-host.invalid", port: 80)
        #expect(code == SOCKS5ReplyCode.hostUnreachable.rawValue)
        await proxy.close()
        await fixture.stop()
    }

    @Test func unreachableNetworkAndHostAreCarriedAsDetails() throws {
        let target = try SocketAddress(ipAddress: "192.0.2.1", port: 80)
        let network = ServerFlowOpener.classify(IOError(errnoCode: ENETUNREACH, reason: "connect"), address: target)
        let host = ServerFlowOpener.classify(IOError(errnoCode: EHOSTUNREACH, reason: "connect"), address: target)
        #expect(SOCKS5ReplyCode(network.result, detail: network.detail) == .networkUnreachable)
        #expect(SOCKS5ReplyCode(host.result, detail: host.detail) == .hostUnreachable)
        // Without the detail (an Apple server), the result code alone decides.
        #expect(SOCKS5ReplyCode(.refused, detail: nil) == .connectionRefused)
    }

    @Test func resultDetailTravelsAndAnUnknownOneIsIgnored() throws {
        let message = TunnelMessage.openResult(identifier: 3, result: .refused, detail: .notAllowedByPolicy)
        let bytes = BinaryPropertyListWriter.bytes(message.propertyList)
        #expect(try TunnelMessage(propertyList: BinaryPropertyListReader.read(bytes)) == message)
        let unknown: PropertyListValue = .dictionary(["identifier": 3, "command": 7, "result-code": 3, "result-detail": 99])
        #expect(try TunnelMessage(propertyList: unknown) == .openResult(identifier: 3, result: .refused))
    }
}

/// Fails every lookup, as a resolver does for a name that does not exist.
struct FailingResolver: NameResolver {
    func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeFailedFuture(HostResolver.Failure.noSuchHost(host: host, reason: "no such name"))
    }
}
