import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Destination policy")
struct DestinationPolicyTests {
    static func policy(allow: [String] = [], deny: [String] = []) throws -> DestinationPolicy {
        try DestinationPolicy(allow: allow, deny: deny)
    }

    static func address(_ text: String) -> IPAddress {
        guard let address = IPAddress(text) else { preconditionFailure("test address \(text)") }
        return address
    }

    @Test func allowsEverythingByDefault() {
        let policy = DestinationPolicy.allowAll
        #expect(policy.decision(forHost: "example.com", port: 443) == .allowed)
        #expect(policy.decision(forHost: "10.0.0.1", port: 22) == .allowed)
        #expect(policy.decision(forAddress: Self.address("::1"), port: 53, requestedHost: "localhost") == .allowed)
    }

    @Test func denyRulesRefuseAndNameTheRule() throws {
        let policy = try Self.policy(deny: ["10.0.0.0/8", "*.internal", "smtp.example.com:25"])
        #expect(policy.decision(forHost: "10.1.2.3", port: 80) == .refused(reason: #"Deny rule "10.0.0.0/8" matches 10.1.2.3 port 80"#))
        #expect(policy.decision(forHost: "db.internal", port: 5432) == .refused(reason: #"Deny rule "*.internal" matches db.internal port 5432"#))
        #expect(policy.decision(forHost: "smtp.example.com", port: 25) == .refused(reason: #"Deny rule "smtp.example.com:25" matches smtp.example.com port 25"#))
        #expect(policy.decision(forHost: "smtp.example.com", port: 587) == .allowed)
        #expect(policy.decision(forHost: "11.0.0.1", port: 80) == .allowed)
    }

    @Test func anAllowListAdmitsOnlyWhatItMatches() throws {
        let policy = try Self.policy(allow: ["*.example.com:443", "192.168.1.5:22"])
        #expect(policy.decision(forHost: "www.example.com", port: 443) == .allowed)
        #expect(policy.decision(forHost: "www.example.com", port: 80) == .refused(reason: "no Allow rule matches www.example.com port 80"))
        #expect(policy.decision(forHost: "192.168.1.5", port: 22) == .allowed)
        #expect(policy.decision(forHost: "192.168.1.6", port: 22) == .refused(reason: "no Allow rule matches 192.168.1.6 port 22"))
        #expect(policy.decision(forHost: "other.org", port: 443) == .refused(reason: "no Allow rule matches other.org port 443"))
    }

    @Test func denyWinsOverAllow() throws {
        let policy = try Self.policy(allow: ["*"], deny: ["*:25", "secret.example.com"])
        #expect(policy.decision(forHost: "mail.example.com", port: 25) == .refused(reason: #"Deny rule "*:25" matches mail.example.com port 25"#))
        #expect(!policy.decision(forHost: "secret.example.com", port: 443).isAllowed)
        #expect(policy.decision(forHost: "public.example.com", port: 443).isAllowed)
        let specific = try Self.policy(allow: ["db.internal:5432"], deny: ["*.internal"])
        #expect(!specific.decision(forHost: "db.internal", port: 5432).isAllowed)
    }

    @Test func aWildcardMatchesSubdomainsButNotTheApex() throws {
        let policy = try Self.policy(allow: ["*.example.com"])
        #expect(policy.decision(forHost: "a.example.com", port: 1).isAllowed)
        #expect(policy.decision(forHost: "a.b.example.com", port: 1).isAllowed)
        #expect(!policy.decision(forHost: "example.com", port: 1).isAllowed)
        #expect(!policy.decision(forHost: "badexample.com", port: 1).isAllowed)
        #expect(!policy.decision(forHost: ".example.com", port: 1).isAllowed)
        #expect(!policy.decision(forHost: "example.com.evil.org", port: 1).isAllowed)
        let apexToo = try Self.policy(allow: ["*.example.com", "example.com"])
        #expect(apexToo.decision(forHost: "example.com", port: 1).isAllowed)
    }

    @Test func namesMatchIgnoringCaseAndTheTrailingDot() throws {
        let policy = try Self.policy(deny: ["db.internal", "*.corp.example"])
        #expect(!policy.decision(forHost: "DB.Internal", port: 1).isAllowed)
        #expect(!policy.decision(forHost: "db.internal.", port: 1).isAllowed)
        #expect(!policy.decision(forHost: "Files.CORP.example.", port: 1).isAllowed)
        #expect(policy.decision(forHost: "db.internal.example", port: 1).isAllowed)
    }

    @Test func matchesIPv6RulesWithAndWithoutPorts() throws {
        let policy = try Self.policy(deny: ["[fd00::/8]:443", "::1"])
        #expect(!policy.decision(forHost: "fd12::1", port: 443).isAllowed)
        #expect(!policy.decision(forHost: "[fd12::1]", port: 443).isAllowed)
        #expect(policy.decision(forHost: "fd12::1", port: 80).isAllowed)
        #expect(!policy.decision(forHost: "::1", port: 80).isAllowed)
        #expect(!policy.decision(forHost: "0:0:0:0:0:0:0:1", port: 80).isAllowed)
        #expect(policy.decision(forHost: "::2", port: 80).isAllowed)
        #expect(!policy.decision(forAddress: Self.address("fdff::9"), port: 443, requestedHost: "v6.internal").isAllowed)
    }

    @Test func ipv4MappedAddressesAreJudgedAsIPv4() throws {
        let policy = try Self.policy(deny: ["10.0.0.0/8"])
        #expect(!policy.decision(forHost: "::ffff:10.1.2.3", port: 80).isAllowed)
        #expect(!policy.decision(forHost: "[::ffff:10.1.2.3]", port: 80).isAllowed)
        #expect(policy.decision(forAddress: Self.address("::ffff:10.1.2.3"), port: 80, requestedHost: "x.example")
            == .refused(reason: #"Deny rule "10.0.0.0/8" matches 10.1.2.3 port 80 (resolved from x.example)"#))
        #expect(policy.decision(forAddress: Self.address("::ffff:11.1.2.3"), port: 80, requestedHost: "x.example").isAllowed)
        let allowMapped = try Self.policy(allow: ["[::ffff:192.168.0.0/112]"])
        #expect(allowMapped.decision(forHost: "192.168.7.7", port: 1).isAllowed)
    }

    @Test func aNameAllowedByNameIsStillRefusedWhenItResolvesIntoADeniedNetwork() throws {
        let policy = try Self.policy(allow: ["db.internal:5432"], deny: ["10.0.0.0/8", "169.254.0.0/16"])
        #expect(policy.decision(forHost: "db.internal", port: 5432) == .allowed)
        #expect(policy.decision(forAddress: Self.address("10.9.9.9"), port: 5432, requestedHost: "db.internal")
            == .refused(reason: #"Deny rule "10.0.0.0/8" matches 10.9.9.9 port 5432 (resolved from db.internal)"#))
        #expect(policy.decision(forAddress: Self.address("172.16.0.4"), port: 5432, requestedHost: "DB.internal.") == .allowed)
    }

    @Test func anAddressAllowListAdmitsANameOnlyIfItResolvesInside() throws {
        let policy = try Self.policy(allow: ["10.0.0.0/8:443"])
        // Before resolution the name may still land inside 10/8 on port 443 ...
        #expect(policy.decision(forHost: "db.internal", port: 443) == .allowed)
        // ... but not on a port no rule covers.
        #expect(policy.decision(forHost: "db.internal", port: 22) == .refused(reason: "no Allow rule matches db.internal port 22"))
        #expect(policy.decision(forAddress: Self.address("10.2.3.4"), port: 443, requestedHost: "db.internal") == .allowed)
        #expect(policy.decision(forAddress: Self.address("192.0.2.1"), port: 443, requestedHost: "db.internal")
            == .refused(reason: "no Allow rule matches 192.0.2.1 port 443 (resolved from db.internal)"))
    }

    @Test func anAllowListOfNamesOnlyRefusesOtherNamesBeforeResolving() throws {
        let policy = try Self.policy(allow: ["*.example.com"])
        #expect(!policy.decision(forHost: "other.org", port: 443).isAllowed)
        // A literal the resolver would accept but that is no allowed name stays refused.
        #expect(!policy.decision(forHost: "127.1", port: 443).isAllowed)
        #expect(!policy.decision(forAddress: Self.address("127.0.0.1"), port: 443, requestedHost: "127.1").isAllowed)
    }

    @Test func theAddressStageCatchesLiteralsTheNameStageCannotRecognise() throws {
        let policy = try Self.policy(deny: ["127.0.0.0/8"])
        // "127.1" is not a dotted quad, so stage 1 treats it as a name ...
        #expect(policy.decision(forHost: "127.1", port: 80) == .allowed)
        // ... and stage 2 refuses the address the resolver made of it.
        #expect(!policy.decision(forAddress: Self.address("127.0.0.1"), port: 80, requestedHost: "127.1").isAllowed)
    }

    @Test func theAddressStageAloneStillAppliesNameRules() throws {
        let policy = try Self.policy(allow: ["*.example.com"], deny: ["*.internal"])
        #expect(policy.decision(forAddress: Self.address("192.0.2.7"), port: 80, requestedHost: "db.internal")
            == .refused(reason: #"Deny rule "*.internal" matches 192.0.2.7 port 80 (resolved from db.internal)"#))
        #expect(policy.decision(forAddress: Self.address("192.0.2.7"), port: 80, requestedHost: "www.example.com") == .allowed)
    }

    @Test func nameRulesNeverMatchLiterals() throws {
        let policy = try Self.policy(allow: ["db.internal"])
        #expect(!policy.decision(forAddress: Self.address("10.0.0.1"), port: 80, requestedHost: "10.0.0.1").isAllowed)
    }

    @Test func judgesSocketAddresses() throws {
        let policy = try Self.policy(deny: ["192.168.0.0/16:22"])
        #expect(!policy.decision(for: try SocketAddress(ipAddress: "192.168.4.4", port: 22), requestedHost: "nas.local").isAllowed)
        #expect(policy.decision(for: try SocketAddress(ipAddress: "192.168.4.4", port: 80), requestedHost: "nas.local").isAllowed)
        #expect(!policy.decision(for: try SocketAddress(ipAddress: "::ffff:192.168.4.4", port: 22), requestedHost: "nas.local").isAllowed)
    }

    @Test func servesAsTheFlowOpenersAuthorizer() throws {
        let authorizer: any DestinationAuthorizer = try Self.policy(deny: ["*.internal", "10.0.0.0/8"])
        #expect(authorizer.refusal(forHost: "db.internal", port: 1) == #"Deny rule "*.internal" matches db.internal port 1"#)
        #expect(authorizer.refusal(forHost: "example.com", port: 1) == nil)
        #expect(authorizer.refusal(forAddress: try SocketAddress(ipAddress: "10.0.0.1", port: 80), requestedHost: "example.com")
            == #"Deny rule "10.0.0.0/8" matches 10.0.0.1 port 80 (resolved from example.com)"#)
        #expect(authorizer.refusal(forAddress: try SocketAddress(ipAddress: "192.0.2.1", port: 80), requestedHost: "example.com") == nil)
        let unix = try SocketAddress(unixDomainSocketPath: "/tmp/x")
        #expect(authorizer.refusal(forAddress: unix, requestedHost: "example.com") != nil)
    }

    @Test func theFirstBadRuleIsReported() {
        #expect(throws: DestinationRuleError(rule: "*:0", problem: #""0" is not a port (1 to 65535) or a range N-M"#)) {
            try DestinationPolicy(allow: ["*"], deny: ["10.0.0.0/8", "*:0"])
        }
    }
}
