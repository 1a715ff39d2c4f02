import Testing
@testable import SimpleTunnelServices

/// `HOST:PORT` and `[IPv6]:PORT`, the one parser every option and setting that
/// names an endpoint goes through.
@Suite("Endpoint text")
struct TunnelEndpointParsingTests {
    @Test(arguments: [
        ("vpn.example.com:4433", TunnelEndpoint(host: "vpn.example.com", port: 4433)),
        ("127.0.0.1:1", TunnelEndpoint(host: "127.0.0.1", port: 1)),
        ("[::1]:65535", TunnelEndpoint(host: "::1", port: 65535)),
        ("[2001:db8::1]:80", TunnelEndpoint(host: "2001:db8::1", port: 80)),
    ])
    func parsesHostAndPort(text: String, endpoint: TunnelEndpoint) throws {
        #expect(try TunnelEndpoint(parsing: text) == endpoint)
        // What it prints parses back to itself.
        #expect(try TunnelEndpoint(parsing: endpoint.description) == endpoint)
    }

    @Test(arguments: [
        ("[::1]4433", "expected [IPv6]:PORT"),
        ("vpn.example.com", "expected HOST:PORT (IPv6 as [ADDRESS]:PORT)"),
        ("::1:4433", "expected HOST:PORT (IPv6 as [ADDRESS]:PORT)"),
        ("[::1:4433", "expected HOST:PORT (IPv6 as [ADDRESS]:PORT)"),
        ("host:0", "expected HOST:PORT with a port from 1 to 65535"),
        ("host:65536", "expected HOST:PORT with a port from 1 to 65535"),
        ("host:http", "expected HOST:PORT with a port from 1 to 65535"),
        (":4433", "expected HOST:PORT with a port from 1 to 65535"),
        ("[]:4433", "expected HOST:PORT with a port from 1 to 65535"),
    ])
    func refusesWhatIsNotAnEndpoint(text: String, problem: String) {
        #expect(throws: TunnelEndpointParseError(text: text, problem: problem)) { try TunnelEndpoint(parsing: text) }
    }

    @Test func optionsNameThemselvesInTheirErrors() {
        #expect {
            try TunnelClientLaunchOptions.parseEndpoint("host:0", option: "--listen")
        } throws: { error in
            "\(error)" == "--listen host:0: expected HOST:PORT with a port from 1 to 65535"
        }
    }

    @Test func bracketsComeOffAHostOnlyWhenTheyEncloseIt() {
        #expect(TunnelEndpoint.unbracketed("[::1]") == "::1")
        #expect(TunnelEndpoint.unbracketed("::1") == "::1")
        #expect(TunnelEndpoint.unbracketed("example.com") == "example.com")
        #expect(TunnelEndpoint.unbracketed("[]") == "[]")
        #expect(TunnelEndpoint.unbracketed("[::1") == "[::1")
    }
}
