import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Server launch: the default destination policy follows the listener")
struct PublicListenerLaunchTests {
    /// A public listener needs client authentication: a users file will do.
    static func prepare(
        host: String, allow: [String] = [], resolvConf: String? = nil, ownAddresses: LocalInterfaceAddresses = LocalInterfaceAddresses()
    ) throws -> TunnelServerLaunch {
        let directory = NSTemporaryDirectory() + "public-launch-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "a", iterations: PasswordHash.minimumIterations))
        try database.write(to: directory + "/users")
        var options = TunnelServerLaunchOptions.none
        options.host = host
        options.allow = allow
        options.usersPath = directory + "/users"
        options.stateDirectory = directory + "/state"
        return try TunnelServerLaunch.prepare(options, resolvConf: resolvConf, ownAddresses: ownAddresses)
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
    func aLoopbackListenerKeepsTodaysDefault(host: String) throws {
        let launch = try Self.prepare(host: host)
        #expect(launch.policy.defaultDenyRules.isEmpty)
        #expect(launch.settings.opener.authorizer.refusal(forHost: "127.0.0.1", port: 8080) == nil)
        #expect(launch.policyNote.contains("listening on loopback"), "\(launch.policyNote)")
    }

    @Test(arguments: ["0.0.0.0", "::", "192.0.2.1", "tunnel.example.com"])
    func aPublicListenerRefusesTheServersOwnServices(host: String) throws {
        let launch = try Self.prepare(host: host)
        let authorizer = launch.settings.opener.authorizer
        #expect(authorizer.refusal(forHost: "127.0.0.1", port: 8080) != nil)
        #expect(authorizer.refusal(forHost: "0.0.0.0", port: 8080) != nil)
        #expect(authorizer.refusal(forHost: "169.254.169.254", port: 80) != nil)
        #expect(authorizer.refusal(forHost: "203.0.113.7", port: 443) == nil)
        #expect(launch.policy == DestinationPolicy.allowAll.withPublicListenerDefaults())
        #expect(launch.policyNote.contains("may not reach this machine's own addresses"), "\(launch.policyNote)")
    }

    @Test func allowOpensOneLoopbackServiceOnAPublicListener() throws {
        let launch = try Self.prepare(host: "0.0.0.0", allow: ["127.0.0.1:5432", "*"])
        let authorizer = launch.settings.opener.authorizer
        #expect(authorizer.refusal(forHost: "127.0.0.1", port: 5432) == nil)
        #expect(authorizer.refusal(forHost: "127.0.0.1", port: 22) != nil)
        #expect(authorizer.refusal(forHost: "example.com", port: 443) == nil)
    }

    @Test func aDNSServerThePolicyDropsIsWarnedAbout() throws {
        // GCP's resolver is its metadata server.
        let resolvConf = "nameserver 169.254.169.254\nnameserver 10.0.0.53\n"
        let publicLaunch = try Self.prepare(host: "0.0.0.0", resolvConf: resolvConf)
        #expect(publicLaunch.warnings.count == 1)
        #expect(publicLaunch.warnings.first?.contains("--allow 169.254.169.254:53") == true, "\(publicLaunch.warnings)")
        #expect(try Self.prepare(host: "0.0.0.0", allow: ["169.254.169.254:53"], resolvConf: resolvConf).warnings.isEmpty)
        // On a loopback listener too: packets to a link-local address stay on the client's link unless opened.
        #expect(try Self.prepare(host: "127.0.0.1", resolvConf: resolvConf).warnings.count == 1)
        #expect(try Self.prepare(host: "127.0.0.1", allow: ["169.254.169.254:53", "*"], resolvConf: resolvConf).warnings.isEmpty)
    }

    @Test func aPublicListenerClosesTheServersOwnAddressesToFlowsUnlessAnAllowAddressRuleOpensOne() throws {
        let own = LocalInterfaceAddresses { Set([IPAddress("198.51.100.7"), IPAddress("2001:db8::7"), IPAddress("10.90.0.1")].compactMap { $0 }) }
        let authorizer = try Self.prepare(host: "0.0.0.0", ownAddresses: own).settings.opener.authorizer
        for (host, refused) in [("198.51.100.7", true), ("::ffff:198.51.100.7", true), ("2001:db8::7", true), ("10.90.0.1", true), ("198.51.100.8", false)] {
            let address = try SocketAddress(ipAddress: host, port: 22)
            #expect((authorizer.refusal(forAddress: address, requestedHost: "server.example") != nil) == refused, "\(host)")
        }
        let opened = try Self.prepare(host: "0.0.0.0", allow: ["198.51.100.7:22", "*"], ownAddresses: own).settings.opener.authorizer
        #expect(opened.refusal(forAddress: try SocketAddress(ipAddress: "198.51.100.7", port: 22), requestedHost: "198.51.100.7") == nil)
        #expect(opened.refusal(forAddress: try SocketAddress(ipAddress: "198.51.100.7", port: 23), requestedHost: "198.51.100.7") != nil)
        // A loopback listener keeps today's open default.
        let loopback = try Self.prepare(host: "127.0.0.1", ownAddresses: own).settings.opener.authorizer
        #expect(loopback.refusal(forAddress: try SocketAddress(ipAddress: "198.51.100.7", port: 22), requestedHost: "198.51.100.7") == nil)
    }

    @Test func theSystemsOwnAddressesAreReadAndReadAgainWhenOld() {
        let system = LocalInterfaceAddresses()
        #expect(system.contains(IPAddress("127.0.0.1")!), "getifaddrs lists lo")
        let reads = NIOLockedValueBox(0)
        let counted = LocalInterfaceAddresses(maximumAge: .seconds(10)) {
            reads.withLockedValue { $0 += 1 }
            return []
        }
        let start = NIODeadline.now()
        _ = counted.contains(IPAddress("10.0.0.1")!, now: start)
        _ = counted.contains(IPAddress("10.0.0.1")!, now: start + .seconds(5))
        #expect(reads.withLockedValue { $0 } == 1)
        _ = counted.contains(IPAddress("10.0.0.1")!, now: start + .seconds(11))
        #expect(reads.withLockedValue { $0 } == 2)
    }

    @Test func theHintToOpenALoopbackServiceSaysAnAllowRuleMakesAListAndTheStartLogSaysSo() throws {
        let open = try Self.prepare(host: "0.0.0.0")
        let refusal = open.settings.opener.authorizer.refusal(forHost: "127.0.0.1", port: 8000)
        #expect(refusal?.contains("--allow 127.0.0.1:8000 opens it (with --allow '*' beside it") == true, "\(refusal ?? "")")
        #expect(!open.policyNote.contains("allow list"))
        let listed = try Self.prepare(host: "0.0.0.0", allow: ["127.0.0.1:8000"])
        #expect(listed.policyNote.contains("make it an allow list: every other destination is refused (add --allow '*'"), "\(listed.policyNote)")
        let kept = try Self.prepare(host: "0.0.0.0", allow: ["127.0.0.1:8000", "*"])
        #expect(kept.policyNote.contains("allow list") && !kept.policyNote.contains("add --allow '*'"), "\(kept.policyNote)")
    }
}
