import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Server launch: defaults and safety rules", .timeLimit(.minutes(2)))
struct TunnelServerLaunchTests {
    func options(_ edit: (inout TunnelServerLaunchOptions) -> Void = { _ in }) -> TunnelServerLaunchOptions {
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = NSTemporaryDirectory() + "launch-test-\(UUID().uuidString)"
        edit(&options)
        return options
    }

    @Test func noArgumentsMeansLoopbackTLSWithAGeneratedCertificate() throws {
        let launch = try TunnelServerLaunch.prepare(options(), resolvConf: "nameserver 10.0.0.53\n")
        #expect(launch.settings.host == "127.0.0.1")
        #expect(launch.settings.port == 4433)
        #expect(launch.settings.tls != nil)
        #expect(launch.selfSignedIdentity?.wasCreated == true)
        #expect(launch.warnings.isEmpty)
        // The embedded configuration, with DNS from the resolver configuration and no pool.
        #expect(launch.settings.clientConfiguration["DNS"]?.dictionaryValue?["Servers"] == .array([.string("10.0.0.53")]))
        #expect(launch.settings.clientConfiguration["IPv4"] == nil)
    }

    @Test func bufferBudgetsComeFromTheirFlags() throws {
        let launch = try TunnelServerLaunch.prepare(
            options {
                $0.tunnelBufferMiB = 2
                $0.earlyDataMiB = 1
                $0.serverBufferMiB = 64
            }, resolvConf: nil)
        #expect(launch.settings.multiplexerLimits.tunnelBufferBudget == 2 << 20)
        #expect(launch.settings.multiplexerLimits.tunnelEarlyDataBudget == 1 << 20)
        #expect(launch.settings.bufferBudget.limit == 64 << 20)
        let defaults = try TunnelServerLaunch.prepare(options(), resolvConf: nil)
        #expect(defaults.settings.bufferBudget.limit <= 1 << 30)
        #expect(throws: TunnelServerLaunchError.self) {
            try TunnelServerLaunch.prepare(options { $0.serverBufferMiB = 0 }, resolvConf: nil)
        }
    }

    @Test func applesSampleConfigurationLoadsUnchanged() throws {
        let launch = try TunnelServerLaunch.prepare(
            options { $0.configurationPath = RepositoryPaths.appleSampleConfiguration.path }, resolvConf: nil)
        #expect(launch.configuration.pool.lowerBound.description == "192.168.2.2")
        #expect(launch.configuration.pool.upperBound.description == "192.168.2.10")
        #expect(launch.settings.clientConfiguration["IPv4"] == nil)
    }

    @Test func aPublicListenerNeedsClientAuthentication() throws {
        #expect(throws: TunnelServerLaunchError.self) {
            try TunnelServerLaunch.prepare(options { $0.host = "0.0.0.0" }, resolvConf: nil)
        }
        do {
            _ = try TunnelServerLaunch.prepare(options { $0.host = "0.0.0.0" }, resolvConf: nil)
        } catch {
            #expect("\(error)".contains("--client-ca"))
        }
    }

    @Test func aPublicListenerWithAUsersFileStarts() throws {
        let path = NSTemporaryDirectory() + "users-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "a", iterations: PasswordHash.minimumIterations))
        try database.write(to: path)
        let launch = try TunnelServerLaunch.prepare(options { $0.host = "0.0.0.0"; $0.usersPath = path }, resolvConf: nil)
        #expect(launch.settings.authentication != nil)
        #expect(throws: TunnelServerLaunchError.self) {
            try TunnelServerLaunch.prepare(options { $0.usersPath = "/nonexistent/users" }, resolvConf: nil)
        }
    }

    @Test func aPublicListenerWithMutualTLSStarts() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let launch = try TunnelServerLaunch.prepare(
            options {
                $0.host = "0.0.0.0"
                $0.clientCAPath = pki.caFile
                $0.certificatePath = pki.certificatePath("server")
                $0.privateKeyPath = pki.keyPath("server")
            }, resolvConf: nil)
        #expect(launch.settings.tls != nil)
        #expect(launch.selfSignedIdentity == nil)
    }

    @Test func plaintextOnlyOnLoopbackAndWithAWarning() throws {
        let launch = try TunnelServerLaunch.prepare(options { $0.plaintext = true }, resolvConf: nil)
        #expect(launch.settings.tls == nil)
        #expect(!launch.warnings.isEmpty)
        #expect(throws: TunnelServerLaunchError.self) {
            try TunnelServerLaunch.prepare(options { $0.plaintext = true; $0.host = "192.0.2.1" }, resolvConf: nil)
        }
    }

    @Test func flagsOverrideTheFileAndBadValuesAreRefused() throws {
        let launch = try TunnelServerLaunch.prepare(
            options {
                $0.maximumFlowsPerTunnel = 7
                $0.connectTimeout = .milliseconds(500)
                $0.deny = ["10.0.0.0/8"]
            }, resolvConf: nil)
        #expect(launch.settings.multiplexerLimits.maximumFlows == 7)
        #expect(launch.settings.opener.connectTimeout == .milliseconds(500))
        #expect(launch.settings.opener.authorizer.refusal(forHost: "10.1.2.3", port: 22) != nil)
        #expect(launch.settings.opener.authorizer.refusal(forHost: "127.0.0.1", port: 22) == nil)

        #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(options { $0.allow = ["10.0.0.0/33"] }, resolvConf: nil) }
        #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(options { $0.maximumTunnels = 0 }, resolvConf: nil) }
        #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(options { $0.port = 70000 }, resolvConf: nil) }
        #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(options { $0.certificatePath = "/x.pem" }, resolvConf: nil) }
        #expect(throws: TunnelServerLaunchError.self) {
            try TunnelServerLaunch.prepare(options { $0.configurationPath = "/nonexistent/config.plist" }, resolvConf: nil)
        }
    }

    @Test func theGeneratedCertificateIsStableAcrossStarts() throws {
        let first = try TunnelServerLaunch.prepare(options(), resolvConf: nil)
        let directory = try #require(first.selfSignedIdentity?.directory)
        let second = try TunnelServerLaunch.prepare(options { $0.stateDirectory = directory }, resolvConf: nil)
        #expect(second.selfSignedIdentity?.wasCreated == false)
        #expect(second.selfSignedIdentity?.sha256Fingerprint == first.selfSignedIdentity?.sha256Fingerprint)
    }
}

@Suite("Client launch: arguments", .timeLimit(.minutes(2)))
struct TunnelClientLaunchTests {
    @Test(arguments: [
        ("8080:example.com:80", "127.0.0.1", 8080, "example.com", 80),
        ("0.0.0.0:8080:10.0.0.1:22", "0.0.0.0", 8080, "10.0.0.1", 22),
        ("[::1]:5353:[2001:db8::53]:53", "::1", 5353, "2001:db8::53", 53),
        ("9000:[fe80::1]:443", "127.0.0.1", 9000, "fe80::1", 443),
    ])
    func parsesForwardSpecifications(text: String, bindHost: String, bindPort: Int, host: String, port: Int) throws {
        let spec = try ForwardSpecification(parsing: text)
        #expect(spec == ForwardSpecification(bindHost: bindHost, bindPort: bindPort, destination: TunnelEndpoint(host: host, port: port)))
    }

    @Test(arguments: ["8080", "8080:host", "a:b:c:d:e", "70000:h:80", "80:h:0", "80::80", "[::1:80:h:80", ":80:h:80"])
    func refusesBadForwardSpecifications(text: String) {
        #expect(throws: ForwardSpecificationError.self) { try ForwardSpecification(parsing: text) }
    }

    @Test func parsesServerAddresses() throws {
        #expect(try TunnelClientLaunchOptions.parseServer("vpn.example.com:4433") == TunnelEndpoint(host: "vpn.example.com", port: 4433))
        #expect(try TunnelClientLaunchOptions.parseServer("[::1]:4433") == TunnelEndpoint(host: "::1", port: 4433))
        for bad in ["vpn.example.com", "::1:4433", "host:0", ":4433", "[::1]4433"] {
            #expect(throws: TunnelClientLaunchError.self) { try TunnelClientLaunchOptions.parseServer(bad) }
        }
    }

    @Test func trustOptionsAreAlternatives() throws {
        var options = TunnelClientLaunchOptions()
        options.insecure = true
        options.pinnedSHA256 = [String(repeating: "ab", count: 32)]
        #expect(throws: TunnelClientLaunchError.self) { try options.connectionSettings() }
        options.insecure = false
        #expect(try options.connectionSettings().tls != nil)
        options.pinnedSHA256 = ["abcd"]
        #expect(throws: TunnelClientLaunchError.self) { try options.connectionSettings() }
        options.pinnedSHA256 = []
        options.plaintext = true
        #expect(try options.connectionSettings().tls == nil)
        options.caFile = "/ca.pem"
        #expect(throws: TunnelClientLaunchError.self) { try options.connectionSettings() }
    }

    @Test func configurationPrintsAsJSONThatPythonReads() async throws {
        let configuration: PropertyListValue = .dictionary([
            "DNS": .dictionary(["Servers": .array([.string("10.0.0.53")]), "SearchDomains": .array([])]),
            "Quote\"d": .string("line\nbreak \u{1}"),
            "Numbers": .array([.integer(-1), .real(1.5), .boolean(true)]),
            "Blob": .data(ByteBuffer(bytes: [0, 1, 2, 255])),
        ])
        let script = "import json,sys; v=json.load(sys.stdin); print(v['DNS']['Servers'][0], v['Quote\"d'] == 'line\\nbreak \\x01', v['Numbers'], v['Blob'])"
        let output = try await ExternalPropertyListReaders.runPython(script, input: Data(configuration.jsonText().utf8))
        #expect(String(decoding: output, as: UTF8.self) == "10.0.0.53 True [-1, 1.5, True] AAEC/w==\n")
    }
}
