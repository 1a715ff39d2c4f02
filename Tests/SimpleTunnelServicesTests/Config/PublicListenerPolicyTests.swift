import Testing
@testable import SimpleTunnelServices

@Suite("Destination policy: public-listener defaults and addresses that reach loopback")
struct PublicListenerPolicyTests {
    typealias Rules = DestinationPolicyTests

    static let publicDefault = DestinationPolicy.allowAll.withPublicListenerDefaults()

    @Test func theDefaultListsEveryRangeItDocuments() {
        #expect(DestinationPolicy.publicListenerDefaultDenials.map(\.text) == [
            "127.0.0.0/8", "::1", "0.0.0.0/8", "::", "169.254.0.0/16", "fe80::/10", "169.254.169.254", "fd00:ec2::254",
        ])
    }

    @Test(arguments: [
        "127.0.0.1", "127.5.6.7", "::1", "[::1]", "0.0.0.0", "0.1.2.3", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0",
        "169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254",
    ])
    func aPublicListenerRefusesTheServersOwnAndMetadataAddresses(host: String) {
        #expect(!Self.publicDefault.decision(forHost: host, port: 80).isAllowed, "\(host)")
    }

    @Test(arguments: ["10.0.0.1", "8.8.8.8", "192.168.1.1", "fd00:ec2::253", "2001:db8::1", "example.com", "localhost"])
    func everythingElseStaysOpen(host: String) {
        // Names are judged by what they resolve to (below); before that nothing refuses them.
        #expect(Self.publicDefault.decision(forHost: host, port: 443).isAllowed, "\(host)")
    }

    @Test func aNameThatResolvesToLoopbackIsRefusedByItsAddress() {
        #expect(!Self.publicDefault.decision(forAddress: Rules.address("127.0.0.1"), port: 22, requestedHost: "localhost").isAllowed)
        #expect(!Self.publicDefault.decision(forAddress: Rules.address("::1"), port: 22, requestedHost: "localhost").isAllowed)
        // `0` and `127.1` are names to us and addresses to getaddrinfo: the resolved address decides.
        #expect(!Self.publicDefault.decision(forAddress: Rules.address("0.0.0.0"), port: 22, requestedHost: "0").isAllowed)
        #expect(!Self.publicDefault.decision(forAddress: Rules.address("169.254.169.254"), port: 80, requestedHost: "metadata.google.internal").isAllowed)
    }

    @Test func denyingLoopbackAlsoDeniesTheAddressesThatReachIt() throws {
        let policy = try Rules.policy(deny: ["127.0.0.0/8", "[::1]"])
        for host in ["0.0.0.0", "0.0.0.7", "::", "[::]", "::ffff:0.0.0.0", "::ffff:127.0.0.1"] {
            #expect(!policy.decision(forHost: host, port: 5432).isAllowed, "\(host)")
        }
        #expect(!policy.decision(forAddress: Rules.address("0.0.0.0"), port: 5432, requestedHost: "0").isAllowed)
        #expect(policy.decision(forHost: "1.0.0.0", port: 5432).isAllowed)
        #expect(policy.decision(forHost: "::2", port: 5432).isAllowed)
        let reason = policy.decision(forHost: "0.0.0.0", port: 5432).refusalReason ?? ""
        #expect(reason == #"Deny rule "127.0.0.0/8" matches 0.0.0.0 port 5432 (which reaches 127.0.0.1)"#)
    }

    @Test func anAllowAddressRuleOpensADefaultDenialAndSaysHow() throws {
        let closed = Self.publicDefault.decision(forHost: "127.0.0.1", port: 5432).refusalReason ?? ""
        #expect(closed.contains("--allow 127.0.0.1:5432"), "\(closed)")
        #expect(Self.publicDefault.decision(forHost: "fe80::1", port: 22).refusalReason?.contains("--allow [fe80::1]:22") == true)

        let policy = try Rules.policy(allow: ["127.0.0.1:5432", "*"]).withPublicListenerDefaults()
        #expect(policy.decision(forHost: "127.0.0.1", port: 5432).isAllowed)
        #expect(policy.decision(forHost: "0.0.0.0", port: 5432).isAllowed, "the same service, spelled another way")
        #expect(!policy.decision(forHost: "127.0.0.1", port: 22).isAllowed)
        #expect(!policy.decision(forHost: "::1", port: 5432).isAllowed)
        // `*` keeps the rest of the world open but opens no default denial.
        #expect(policy.decision(forHost: "example.com", port: 443).isAllowed)
        #expect(!policy.decision(forHost: "169.254.169.254", port: 80).isAllowed)
    }

    @Test func nameRulesDoNotOpenADefaultDenialAndDenyStillWins() throws {
        let byName = try Rules.policy(allow: ["localhost", "*.example.com"]).withPublicListenerDefaults()
        #expect(!byName.decision(forAddress: Rules.address("127.0.0.1"), port: 80, requestedHost: "localhost").isAllowed)
        #expect(!byName.decision(forAddress: Rules.address("169.254.169.254"), port: 80, requestedHost: "evil.example.com").isAllowed)
        #expect(byName.decision(forAddress: Rules.address("203.0.113.5"), port: 80, requestedHost: "www.example.com").isAllowed)

        let denied = try Rules.policy(allow: ["127.0.0.0/8"], deny: ["127.0.0.1:22"]).withPublicListenerDefaults()
        #expect(!denied.decision(forHost: "127.0.0.1", port: 22).isAllowed)
        #expect(denied.decision(forHost: "127.0.0.1", port: 80).isAllowed)
        let everything = try Rules.policy(allow: ["0.0.0.0/0", "::/0"]).withPublicListenerDefaults()
        #expect(everything.decision(forHost: "169.254.169.254", port: 80).isAllowed)
        #expect(everything.decision(forHost: "::1", port: 80).isAllowed)
    }
}
