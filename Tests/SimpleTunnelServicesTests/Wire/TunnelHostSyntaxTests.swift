import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Hosts are checked at the wire", .timeLimit(.minutes(3)))
struct TunnelHostSyntaxTests {
    @Test(arguments: [
        "example.com", "EXAMPLE.com.", "bücher.example", "例え.テスト", "db-1.internal", "_srv._tcp.example.com", "xn--bcher-kva.example", "localhost",
        "10.1.2.3", "127.1", "::1", "[::1]", "2001:db8::53", "::ffff:10.1.2.3", "[fd00:ec2::254]",
        String(repeating: "a", count: 63) + ".com", [String](repeating: String(repeating: "b", count: 49), count: 5).joined(separator: "."),
    ])
    func namesAndLiteralsAreHosts(host: String) {
        #expect(TunnelHostSyntax.problem(with: host) == nil, "\(host)")
    }

    @Test(arguments: [
        "", ".", "a..b", ".example.com", "example.com..", "127.0.0.1\0.example.com", "secret.internal\0", "a b", " example.com",
        "example.com ", "a\tb", "a\nb", "a\rb", "a\u{7F}b", "a\u{200B}b", "a\u{202E}b", "a\u{00A0}b", "a\u{3000}b", "a/b", "a%b", "a@b", "a*b", "[::1", "[example.com]",
        "fe80::1%eth0", "[fe80::1%25eth0]", "::1 ", "1.2.3.4:80", String(repeating: "a", count: 64) + ".com",
        String(repeating: "a.", count: 127) + "ab",
    ])
    func anythingElseIsNot(host: String) {
        #expect(TunnelHostSyntax.problem(with: host) != nil, "\(host.debugDescription)")
        #expect(throws: TunnelEndpointError.self) { try TunnelEndpoint(validatingHost: host, port: 80) }
    }

    static func open(host: String) -> PropertyListValue {
        .dictionary(["command": 6, "identifier": 9, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": .string(host), "port": 80])
    }

    static func datagram(host: String) -> PropertyListValue {
        .dictionary(["command": 1, "identifier": 9, "data": .data(ByteBuffer(string: "x")), "host": .string(host), "port": 53])
    }

    @Test(arguments: ["127.0.0.1\0.example.com", "localhost\0", "a b.example.com", "x\n.example.com"])
    func aBadHostMakesAnOpenMalformedAndADatagramDropped(host: String) {
        for (message, disposition) in [(Self.open(host: host), TunnelMessageDisposition.openFailure(identifier: 9)), (Self.datagram(host: host), .drop)] {
            do {
                let decoded = try TunnelMessage(propertyList: message)
                Issue.record("decoded \(decoded)")
            } catch {
                #expect(error.kind == .invalidValue && error.key == "host" && error.disposition == disposition)
                #expect(!error.description.contains("\n") && !error.description.contains("\0"), "\(error.description.debugDescription)")
            }
        }
    }

    @Test func aGoodHostDecodesAsSent() throws {
        #expect(try TunnelMessage(propertyList: Self.open(host: "Db.Example.com.")) == .open(identifier: 9, request: .tcp(TunnelEndpoint(host: "Db.Example.com.", port: 80))))
    }

    @Test(arguments: ["8080:bad\u{0}host:80", "8080:a b:80", "8080:..:80"])
    func aForwardToAHostThatIsNotOneIsRefusedAtStart(text: String) {
        #expect(throws: ForwardSpecificationError.self) { try ForwardSpecification(parsing: text) }
    }

    @Test func thePolicyAndTheResolverRefuseABadHostEvenIfOneGotPastTheDecoder() async throws {
        let policy = try DestinationPolicy(allow: ["*.example.com"], deny: [])
        #expect(policy.decision(forHost: "127.0.0.1\0.example.com", port: 80) != .allowed)
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 80)
        #expect(policy.refusal(forAddress: address, requestedHost: "127.0.0.1\0.example.com") != nil)
        #expect(policy.refusal(forAddress: address, requestedHost: "echo.example.com") == nil)
        let lookup = HostResolver().resolve(host: "127.0.0.1\0.example.com", port: 80, kind: .stream, on: MultiThreadedEventLoopGroup.singleton.next())
        await #expect(throws: HostResolver.Failure.self) { try await lookup.get() }
    }

    @Test func aNameRuleFoldsOnlyASCIICaseAsDNSDoes() throws {
        let policy = try DestinationPolicy(allow: ["key.example.com"], deny: [])
        #expect(policy.decision(forHost: "KEY.Example.COM", port: 443) == .allowed)
        // U+212A KELVIN SIGN lowercases to "k" in Unicode, but DNS looks it up as another name.
        #expect(policy.decision(forHost: "\u{212A}ey.example.com", port: 443) != .allowed)
    }
}
