import NIOCore
import Testing
@testable import SimpleTunnelServices

/// The policy as a client meets it: TCP opens through a real server to a
/// real listener on the server's loopback, names resolved by the system.
@Suite("Destination policy on real sockets: the server's loopback", .timeLimit(.minutes(3)))
struct DestinationPolicySocketTests {
    /// The result of opening each host at the fixture's echo port, under `authorizer` (a policy, or the own-address guard).
    static func results(_ authorizer: any DestinationAuthorizer, hosts: [String]) async throws -> [String: TunnelConnectionOpenResult] {
        let fixture = try await RawServerFixture.start { settings in
            settings.opener.resolver = HostResolver()
            settings.opener.authorizer = authorizer
        }
        let peer = try await fixture.peer()
        var results: [String: TunnelConnectionOpenResult] = [:]
        for (index, host) in hosts.enumerated() {
            results[host] = try await ServerProtocolTests().open(peer, Int64(index + 1), host, fixture.echoPort)
        }
        await peer.close()
        await fixture.stop()
        return results
    }

    static func all(_ hosts: [String], _ result: TunnelConnectionOpenResult) -> [String: TunnelConnectionOpenResult] {
        Dictionary(uniqueKeysWithValues: hosts.map { ($0, result) })
    }

    @Test func aPublicListenersDefaultRefusesEverySpellingOfLoopbackAndAllowOpensThem() async throws {
        let hosts = ["127.0.0.1", "0.0.0.0", "0", "localhost"]
        let publicDefault = DestinationPolicy.allowAll.withPublicListenerDefaults()
        #expect(try await Self.results(publicDefault, hosts: hosts) == Self.all(hosts, .refused))
        // Opened, the same spellings reach the service: the refusals above were the policy's, not the socket's.
        let opened = try DestinationPolicy(allow: ["127.0.0.1", "*"], deny: []).withPublicListenerDefaults()
        #expect(try await Self.results(opened, hosts: hosts) == Self.all(hosts, .success))
    }

    @Test func denyingLoopbackRefusesZeroAndTheUnspecifiedAddress() async throws {
        let hosts = ["0.0.0.0", "0", "::ffff:0.0.0.0"]
        // Without the rule each of them reaches the echo server on 127.0.0.1.
        #expect(try await Self.results(DestinationPolicy.allowAll, hosts: hosts) == Self.all(hosts, .success))
        let policy = try DestinationPolicy(allow: [], deny: ["127.0.0.0/8", "[::1]"])
        #expect(try await Self.results(policy, hosts: hosts) == Self.all(hosts, .refused))
    }
}

/// The server's own addresses as a client meets them on a public listener:
/// here loopback stands in for them (the policy alone would allow it), so a
/// refusal can only be the guard's.
@Suite("Destination policy on real sockets: the server's own addresses", .timeLimit(.minutes(3)))
struct OwnAddressSocketTests {
    @Test func anOpenToTheServersOwnAddressIsRefusedUntilAnAllowAddressRuleOpensIt() async throws {
        let own = LocalInterfaceAddresses { Set([IPAddress("127.0.0.1")].compactMap { $0 }) }
        let hosts = ["127.0.0.1", "::ffff:127.0.0.1"]
        let guarded = OwnAddressGuard(policy: .allowAll, ownAddresses: own)
        #expect(try await DestinationPolicySocketTests.results(guarded, hosts: hosts) == DestinationPolicySocketTests.all(hosts, .refused))
        let opened = OwnAddressGuard(policy: try DestinationPolicy(allow: ["127.0.0.1", "*"], deny: []), ownAddresses: own)
        #expect(try await DestinationPolicySocketTests.results(opened, hosts: hosts) == DestinationPolicySocketTests.all(hosts, .success))
    }
}
