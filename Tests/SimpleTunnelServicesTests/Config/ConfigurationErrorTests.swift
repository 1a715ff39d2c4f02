import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// Every way a configuration can be wrong produces a message that names the
/// key (or the file) and says what was expected.
@Suite("Configuration errors")
struct ConfigurationErrorTests {
    static let pool = SampleConfiguration.pool

    static func message(_ propertyList: PropertyListValue) -> String? {
        do {
            _ = try TunnelServerConfiguration(propertyList: propertyList)
            return nil
        } catch {
            return error.description
        }
    }

    static func ipv4(_ entries: [String: PropertyListValue]) -> PropertyListValue {
        .dictionary(["IPv4": .dictionary(entries)])
    }

    static func pool(start: PropertyListValue, end: PropertyListValue) -> PropertyListValue {
        ipv4(["Pool": .dictionary(["StartAddress": start, "EndAddress": end])])
    }

    static func route(_ address: PropertyListValue, _ netmask: PropertyListValue) -> PropertyListValue {
        ipv4(["Pool": pool, "Routes": .array([.dictionary(["Address": address, "Netmask": netmask])])])
    }

    static let cases: [(PropertyListValue, String)] = [
        (.array([]), "the configuration's top level must be a dictionary, but it is an array"),
        (.dictionary(["IPv4": .string("10.0.0.0/8")]), #"IPv4: expected a dictionary, got "10.0.0.0/8""#),
        (ipv4([:]), "IPv4.Pool: missing; expected a dictionary with StartAddress and EndAddress"),
        (ipv4(["Pool": .dictionary(["EndAddress": .string("10.0.0.9")])]), "IPv4.Pool.StartAddress: missing; expected the first IPv4 address to lease"),
        (pool(start: .string("192.168.2.x"), end: .string("192.168.2.10")),
         #"IPv4.Pool.StartAddress: expected an IPv4 address such as 192.168.2.2, got "192.168.2.x""#),
        (pool(start: .string("192.168.2.2"), end: 7), "IPv4.Pool.EndAddress: expected an IPv4 address such as 192.168.2.2, got 7"),
        (ipv4(["Pool": .dictionary(["StartAddress": .string("10.0.0.1"), "EndAddress": .string("10.0.0.9"), "Size": 9])]),
         "IPv4.Pool.Size: unknown key; known keys here: StartAddress, EndAddress"),
        (pool(start: .string("10.0.0.9"), end: .string("10.0.0.1")),
         "IPv4.Pool: StartAddress 10.0.0.9 comes after EndAddress 10.0.0.1; the pool runs from StartAddress up to EndAddress, both included"),
        (ipv4(["Pool": pool, "Routes": .dictionary([:])]),
         "IPv4.Routes: expected an array of routes, each a dictionary with Address and Netmask, got a dictionary"),
        (ipv4(["Pool": pool, "Routes": .array([.string("10.0.0.0/8")])]), #"IPv4.Routes[0]: expected a dictionary, got "10.0.0.0/8""#),
        (ipv4(["Pool": pool, "Routes": .array([.dictionary(["Address": .string("10.0.0.0")])])]),
         "IPv4.Routes[0].Netmask: missing; expected the route's netmask, such as 255.0.0.0"),
        (route(.string("10.0.0"), .string("255.0.0.0")), #"IPv4.Routes[0].Address: expected an IPv4 network address such as 10.0.0.0, got "10.0.0""#),
        (route(.string("10.0.0.0"), .string("255.0.255.0")),
         #"IPv4.Routes[0].Netmask: expected a contiguous IPv4 netmask such as 255.255.0.0, got "255.0.255.0""#),
        (route(.string("10.0.0.0"), .string("/8")), #"IPv4.Routes[0].Netmask: expected a contiguous IPv4 netmask such as 255.255.0.0, got "/8""#),
        (route(.string("10.1.0.0"), .string("255.0.0.0")),
         "IPv4.Routes[0]: 10.1.0.0/255.0.0.0: the address has bits set beyond the prefix (did you mean 10.0.0.0/8?)"),
        (SampleConfiguration.with(["DNS": .dictionary(["SearchDomains": .strings(["example.com"])])]),
         "DNS.Servers: missing; expected an array of DNS server addresses (an empty array sends clients no DNS settings)"),
        (SampleConfiguration.with(["DNS": .dictionary(["Servers": .strings(["8.8.8.8", "dns.google"])])]),
         #"DNS.Servers[1]: expected an IPv4 or IPv6 address such as 192.168.2.1 or fd00::1, got "dns.google""#),
        (SampleConfiguration.with(["DNS": .dictionary(["Servers": .string("8.8.8.8")])]),
         #"DNS.Servers: expected an array of IP address strings, got "8.8.8.8""#),
        (SampleConfiguration.with(["DNS": .dictionary(["Servers": .strings(["8.8.8.8"]), "SearchDomains": .array([.boolean(true)])])]),
         "DNS.SearchDomains[0]: expected a domain name such as example.com, got true"),
        (SampleConfiguration.with(["Server": .array([])]), "Server: expected a dictionary, got an array"),
        (SampleConfiguration.withServer(["Polcy": .dictionary([:])]),
         "Server.Polcy: unknown key (did you mean Policy?); known keys here: ListenAddress, Port, Certificate, PrivateKey, ClientCA, Database, DatabasePasswordFile, ProxyProtocolFrom, Limits, Policy, ClientIsolation, AppLayer, Groups, Users"),
        (SampleConfiguration.withServer(["port": 443]),
         "Server.port: unknown key (did you mean Port?); known keys here: ListenAddress, Port, Certificate, PrivateKey, ClientCA, Database, DatabasePasswordFile, ProxyProtocolFrom, Limits, Policy, ClientIsolation, AppLayer, Groups, Users"),
        (SampleConfiguration.withServer(["Usres": .dictionary([:])]),
         "Server.Usres: unknown key (did you mean Users?); known keys here: ListenAddress, Port, Certificate, PrivateKey, ClientCA, Database, DatabasePasswordFile, ProxyProtocolFrom, Limits, Policy, ClientIsolation, AppLayer, Groups, Users"),
        (SampleConfiguration.withServer(["Users": .dictionary(["build": .dictionary(["IPv4Adress": .string("192.168.2.9")])])]),
         "Server.Users.build.IPv4Adress: unknown key (did you mean IPv4Address?); known keys here: Groups, Expires, Disabled, IPv4Address, IPv6Address"),
        (SampleConfiguration.withServer(["Groups": .dictionary(["lab": .dictionary(["Route": .dictionary([:])])])]),
         "Server.Groups.lab.Route: unknown key (did you mean Routes?); known keys here: Policy, AppLayer, Limits, Routes, DNS"),
        (SampleConfiguration.withServer(["Groups": .dictionary(["lab": .dictionary(["Routes": .dictionary(["IPv5": .array([])])])])]),
         "Server.Groups.lab.Routes.IPv5: unknown key (did you mean IPv4?); known keys here: IPv4, IPv6"),
        (SampleConfiguration.withServer(["Groups": .dictionary(["lab": .dictionary(["DNS": .dictionary(["Servers": .strings(["dns.lab"])])])])]),
         #"Server.Groups.lab.DNS.Servers[0]: expected an IPv4 or IPv6 address such as 192.168.2.1 or fd00::1, got "dns.lab""#),
        (SampleConfiguration.withServer(["Port": 70000]), "Server.Port: expected an integer from 0 to 65535, got 70000"),
        (SampleConfiguration.withServer(["Port": .string("443")]), #"Server.Port: expected an integer from 0 to 65535, got "443""#),
        (SampleConfiguration.withServer(["ListenAddress": .string("")]),
         #"Server.ListenAddress: expected an address to listen on, such as 0.0.0.0 or ::, got """#),
        (SampleConfiguration.withServer(["Certificate": .data(ByteBuffer(bytes: [1, 2]))]),
         "Server.Certificate: expected a file path, got data (2 bytes)"),
        (SampleConfiguration.withServer(["Limits": .dictionary(["Tunnels": .string("ten")])]),
         #"Server.Limits.Tunnels: expected a positive integer (1 to 16777216), got "ten""#),
        (SampleConfiguration.withServer(["Limits": .dictionary(["FlowsPerTunnel": 0])]),
         "Server.Limits.FlowsPerTunnel: expected a positive integer (1 to 16777216), got 0"),
        (SampleConfiguration.withServer(["Limits": .dictionary(["UDPFlowsPerTunnel": .integer(Int128(UInt64.max) * 2)])]),
         "Server.Limits.UDPFlowsPerTunnel: expected a positive integer (1 to 16777216), got 36893488147419103230"),
        (SampleConfiguration.withServer(["Limits": .dictionary(["ConnectTimeout": .real(-1)])]),
         "Server.Limits.ConnectTimeout: expected a positive number of seconds (at most 86400), got -1.0"),
        (SampleConfiguration.withServer(["Limits": .dictionary(["UDPIdleTimeout": .real(.infinity)])]),
         "Server.Limits.UDPIdleTimeout: expected a positive number of seconds (at most 86400), got inf"),
        (SampleConfiguration.withServer(["Limits": .dictionary(["FirstMessageTimeout": .string("10s")])]),
         #"Server.Limits.FirstMessageTimeout: expected a positive number of seconds (at most 86400), got "10s""#),
        (SampleConfiguration.withServer(["Limits": .dictionary(["Tunnel": 5])]),
         "Server.Limits.Tunnel: unknown key (did you mean Tunnels?); known keys here: FlowsPerTunnel, Tunnels, TunnelsPerLogin, FirstMessageTimeout, ConnectTimeout, UDPIdleTimeout, UDPFlowsPerTunnel, FlowSockets, FlowDrainTimeout, IdleTimeout, TunnelBufferMiB, EarlyDataMiB, ServerBufferMiB, Startups, StartupsPerAddress, TLSHandshakeTimeout, LoginChecks, LoginChecksPerAddress, LoginFailures"),
        (SampleConfiguration.withServer(["Policy": .dictionary(["Allwo": .strings(["*"])])]),
         "Server.Policy.Allwo: unknown key (did you mean Allow?); known keys here: Allow, Deny"),
        (SampleConfiguration.withServer(["Policy": .dictionary(["Deny": .string("*")])]),
         #"Server.Policy.Deny: expected an array of destination rule strings, got "*""#),
        (SampleConfiguration.withServer(["Policy": .dictionary(["Allow": .strings(["*.example.com", "10.0.0.0/33"])])]),
         #"Server.Policy.Allow[1]: expected a destination rule TARGET[:PORTS], such as 10.0.0.0/8, *.example.com:443 or [fd00::/8]:22, got "10.0.0.0/33" (prefix length "33" is not a number from 0 to 32)"#),
        (SampleConfiguration.withServer(["Policy": .dictionary(["Deny": .array([22])])]),
         "Server.Policy.Deny[0]: expected a destination rule TARGET[:PORTS], such as 10.0.0.0/8, *.example.com:443 or [fd00::/8]:22, got 22"),
    ]

    @Test(arguments: cases)
    func explainsWhatIsWrongAndWhere(propertyList: PropertyListValue, expected: String) {
        #expect(Self.message(propertyList) == expected)
    }

    /// A server for flows only needs no IPv4: it is accepted, and its pool counts as not configured.
    @Test func aConfigurationWithoutIPv4IsAcceptedWithoutAPool() throws {
        let configuration = try TunnelServerConfiguration(propertyList: .dictionary(["DNS": .dictionary(["Servers": .array([.string("192.0.2.53")])])]))
        #expect(!configuration.poolIsConfigured)
        #expect(try TunnelServerConfiguration(propertyList: SampleConfiguration.with([:])).poolIsConfigured)
    }

    @Test func refusesClientSettingsTooLargeForOneMessage() {
        let script = String(repeating: "x", count: 130_000)
        let tooLarge = SampleConfiguration.with(["Proxies": .dictionary(["ProxyAutoConfigJavaScript": .string(script)])])
        let message = Self.message(tooLarge) ?? ""
        #expect(message.hasPrefix("(top level): what clients receive is "))
        #expect(message.contains("126976"))
        let fits = SampleConfiguration.with(["Proxies": .dictionary(["ProxyAutoConfigJavaScript": .string(String(script.prefix(100_000)))])])
        #expect(Self.message(fits) == nil)
    }

    @Test func aMissingFileNamesThePathAndTheSystemsReason() {
        #expect(throws: ConfigurationError.unreadableFile(path: "/nonexistent/tunnel.plist", reason: "No such file or directory")) {
            try TunnelServerConfiguration.load(contentsOf: "/nonexistent/tunnel.plist", resolvConf: nil)
        }
    }

    @Test func aDirectoryIsNotAConfigurationFile() throws {
        let folder = try TemporaryDirectory()
        #expect(throws: ConfigurationError.unreadableFile(path: folder.path, reason: "Is a directory")) {
            try TunnelServerConfiguration.load(contentsOf: folder.path, resolvConf: nil)
        }
    }

    @Test func aFileThatIsNotAPropertyListSaysSo() throws {
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.conf", text: "port = 443\n")
        #expect {
            try TunnelServerConfiguration.load(contentsOf: path, resolvConf: nil)
        } throws: { error in
            guard case .notAPropertyList(let reportedPath, let reason) = error as? ConfigurationError else { return false }
            return reportedPath == path && !reason.isEmpty
                && "\(error)".hasPrefix("configuration file \(path) is not a property list: ")
        }
    }

    @Test func aBrokenXMLFileCarriesTheReadersExplanation() throws {
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.plist", text: "<?xml version=\"1.0\"?><plist><dict><key>IPv4</key></plist>")
        #expect {
            try TunnelServerConfiguration.load(contentsOf: path, resolvConf: nil)
        } throws: { error in
            "\(error)".contains("XML property list: ")
        }
    }

    @Test func aTopLevelArrayInAFileIsRefused() throws {
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.plist", binary: .array([.string("IPv4")]))
        #expect(throws: ConfigurationError.topLevelNotADictionary(found: "an array")) {
            try TunnelServerConfiguration.load(contentsOf: path, resolvConf: nil)
        }
    }

    @Test func suggestsOnlyCloseKeys() {
        #expect(closestKey(to: "Polcy", among: ["Allow", "Policy"]) == "Policy")
        #expect(closestKey(to: "LISTENADDRESS", among: ["ListenAddress"]) == "ListenAddress")
        #expect(closestKey(to: "Users", among: ["Port", "Policy", "Limits"]) == nil)
        #expect(editDistance("kitten", "sitting") == 3)
    }
}
