import Testing
@testable import SimpleTunnelServices

@Suite("Destination rules")
struct DestinationRuleTests {
    static func rule(_ text: String) throws -> DestinationRule {
        try DestinationRule(parsing: text)
    }

    @Test func parsesEveryTargetForm() throws {
        #expect(try Self.rule("*").target == .any)
        #expect(try Self.rule("10.0.0.0/8").target == .ipv4(try IPv4Network(parsing: "10.0.0.0/8")))
        #expect(try Self.rule("192.168.1.5").target == .ipv4(IPv4Network(host: IPv4Address(192, 168, 1, 5))))
        #expect(try Self.rule("::1").target == .ipv6(IPv6Network(host: IPv6Address(rawValue: 1))))
        #expect(try Self.rule("fd00::/8").target == .ipv6(try IPv6Network(parsing: "fd00::/8")))
        #expect(try Self.rule("[fd00::/8]").target == .ipv6(try IPv6Network(parsing: "fd00::/8")))
        #expect(try Self.rule("[fd00::/8]:443").ports == PortSet(ranges: [443...443]))
        #expect(try Self.rule("db.internal").target == .hostName("db.internal"))
        #expect(try Self.rule("DB.Internal.").target == .hostName("db.internal"))
        #expect(try Self.rule("*.Example.com").target == .subdomains(of: "example.com"))
        #expect(try Self.rule("_sip._tcp.example.com").target == .hostName("_sip._tcp.example.com"))
    }

    @Test func mappedIPv6RulesBecomeIPv4Rules() throws {
        #expect(try Self.rule("[::ffff:10.0.0.0/104]:22").target == .ipv4(try IPv4Network(parsing: "10.0.0.0/8")))
        #expect(try Self.rule("::ffff:192.168.1.5").target == .ipv4(IPv4Network(host: IPv4Address(192, 168, 1, 5))))
    }

    @Test func parsesPortLists() throws {
        #expect(try Self.rule("*").ports == .any)
        #expect(try Self.rule("*:22").ports == PortSet(ranges: [22...22]))
        #expect(try Self.rule("*:8000-8080").ports == PortSet(ranges: [8000...8080]))
        let list = try Self.rule("example.com:22,80,8000-8080").ports
        #expect(list == PortSet(ranges: [22...22, 80...80, 8000...8080]))
        #expect(list.contains(22) && list.contains(80) && list.contains(8000) && list.contains(8080) && list.contains(8040))
        #expect(!list.contains(23) && !list.contains(443) && !list.contains(8081))
        #expect(try Self.rule("*:1-65535").ports.contains(65535))
    }

    @Test func keepsTheTextAsWritten() throws {
        #expect(try Self.rule("DB.internal:22,80").description == "DB.internal:22,80")
        #expect(DestinationRule(target: .ipv6(try IPv6Network(parsing: "fd00::/8")), ports: PortSet(ranges: [1...2])).text == "[fd00::/8]:1-2")
        #expect(DestinationRule(target: .subdomains(of: "example.com")).text == "*.example.com")
    }

    static let badRules: [(String, String)] = [
        ("", "the rule is empty"),
        ("10.0.0.0/8 :22", "a rule has no spaces; write TARGET or TARGET:PORTS, such as 10.0.0.0/8:22,443"),
        ("10.0.0.0/33", #"prefix length "33" is not a number from 0 to 32"#),
        ("10.1.0.0/8", "the address has bits set beyond the prefix (did you mean 10.0.0.0/8?)"),
        ("256.0.0.1", #""256.0.0.1" is not an IPv4 address"#),
        ("10.0.0", #""10.0.0" is not an IPv4 address"#),
        ("db.internal/24", #""db.internal" is not an IPv4 address"#),
        ("fd00::/8:443", #"prefix length "8:443" is not a number from 0 to 128; to add ports, write the IPv6 target in brackets, as in [fd00::/8]:443"#),
        ("[fd00::/8", "missing ']' after the IPv6 address"),
        ("[fd00::/8]443", #"expected ':PORTS' after ']', found "443""#),
        ("[fd00::/8]:", #"expected ':PORTS' after ']', found ":""#),
        ("[10.0.0.1]:22", #""10.0.0.1" is not an IPv6 address"#),
        ("fd00::zz", #""fd00::zz" is not an IPv6 address; to add ports, write the IPv6 target in brackets, as in [fd00::/8]:443"#),
        ("*:0", #""0" is not a port (1 to 65535) or a range N-M"#),
        ("*:65536", #""65536" is not a port (1 to 65535) or a range N-M"#),
        ("*:http", #""http" is not a port (1 to 65535) or a range N-M"#),
        ("*:22,", "an empty port is not a port (1 to 65535) or a range N-M"),
        ("*:", "an empty port is not a port (1 to 65535) or a range N-M"),
        ("*:-22", #""-22" is not a port (1 to 65535) or a range N-M"#),
        ("*:8080-8000", #"port range "8080-8000" runs backwards (write 8000-8080)"#),
        (":22", "the target before ':' is empty"),
        ("*example.com", "a wildcard is either '*' alone or a leading '*.' as in *.example.com"),
        ("www.*.com", "a wildcard is either '*' alone or a leading '*.' as in *.example.com"),
        ("*.", "the host name is empty"),
        ("db..internal", "the host name has an empty label (two dots in a row?)"),
        ("bad_host!", #""bad_host!" has characters a host name cannot have (letters, digits, '-' and '_' only)"#),
        ("bücher.example", #""bücher" has characters a host name cannot have (letters, digits, '-' and '_' only)"#),
        ("host.123", "it is neither a valid IPv4 address nor a host name"),
    ]

    @Test(arguments: badRules)
    func refusesBadRulesSayingWhy(text: String, problem: String) {
        #expect(throws: DestinationRuleError(rule: text, problem: problem)) {
            try DestinationRule(parsing: text)
        }
    }

    @Test func theErrorQuotesTheRule() {
        let error = DestinationRuleError(rule: "*:0", problem: "bad")
        #expect(error.description == #"policy rule "*:0": bad"#)
    }
}
