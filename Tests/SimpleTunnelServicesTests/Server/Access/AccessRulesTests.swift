import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

/// `Server.Groups`, `Server.Users` and `Server.AppLayer` as values: how they
/// are read, what a login may do, and what a reload says changed.
@Suite("Users and groups, by value")
struct AccessRulesTests {
    static func policy(allow: [String] = [], deny: [String] = []) -> PropertyListValue {
        var policy: [String: PropertyListValue] = [:]
        if !allow.isEmpty { policy["Allow"] = .strings(allow) }
        if !deny.isEmpty { policy["Deny"] = .strings(deny) }
        return .dictionary(policy)
    }

    /// Staff with everything, contractors on one network, a group kept to the IP tunnel, a guest.
    static let example: [String: PropertyListValue] = [
        "Groups": .dictionary([
            "staff": .dictionary([:]),
            "contractors": .dictionary([
                "Policy": policy(allow: ["10.20.0.0/16:443"]), "Limits": .dictionary(["Tunnels": 2]),
            ]),
            "ip-only": .dictionary(["AppLayer": .boolean(false), "Policy": policy(deny: ["10.20.9.0/24"])]),
        ]),
        "Users": .dictionary([
            "alice": .dictionary(["Groups": .strings(["staff"])]),
            "bob": .dictionary(["Groups": .strings(["contractors", "ip-only"])]),
            "guest": .dictionary(["Expires": .string("2026-12-04T18:00:00Z")]),
            "mallory": .dictionary(["Disabled": .boolean(true)]),
        ]),
    ]

    static func rules(_ server: [String: PropertyListValue]) throws -> AccessRules {
        try TunnelServerConfiguration(propertyList: SampleConfiguration.withServer(server)).server.access
    }

    static func address(_ text: String) -> IPAddress {
        IPAddress(text)!
    }

    @Test func theExampleReadsAsWritten() throws {
        let rules = try Self.rules(Self.example)
        #expect(rules.groups.keys.sorted() == ["contractors", "ip-only", "staff"])
        #expect(rules.users["bob"]?.groups == ["contractors", "ip-only"])
        #expect(rules.users["guest"]?.expires == Date(timeIntervalSince1970: 1_796_407_200))
        #expect(rules.users["mallory"]?.disabled == true)
        #expect(rules.appLayer)
        #expect(try Self.rules(["AppLayer": .boolean(false)]).appLayer == false)
        // A plist <date> is the same date.
        let dated = try Self.rules(["Users": .dictionary(["guest": .dictionary(["Expires": .date(1_796_407_200 - 978_307_200)])])])
        #expect(dated.users["guest"]?.expires == rules.users["guest"]?.expires)
    }

    @Test func withoutGroupsOrUsersEveryLoginIsServedAsBefore() throws {
        let rules = try Self.rules([:])
        #expect(rules == .none)
        for login in [nil, "alice", "anyone"] {
            let profile = rules.profile(for: login)
            #expect(profile.policies.isEmpty && profile.appLayer && profile.tunnels == nil && profile.loginRefusal(now: Date()) == nil)
        }
    }

    @Test func aFlowMustPassEveryGroupOfItsLogin() throws {
        let rules = try Self.rules(Self.example)
        let alice = rules.profile(for: "alice"), bob = rules.profile(for: "bob"), stranger = rules.profile(for: "carol")
        // Staff and a login with no entry: no rules beyond the server's.
        #expect(alice.refusal(forAddress: Self.address("10.30.0.1"), port: 22, requestedHost: "10.30.0.1") == nil)
        #expect(stranger.refusal(forHost: "example.com", port: 80) == nil)
        // The contractor: only 10.20/16 port 443, and not 10.20.9/24, which its other group denies.
        #expect(bob.refusal(forAddress: Self.address("10.20.1.5"), port: 443, requestedHost: "10.20.1.5") == nil)
        let otherPort = bob.refusal(forAddress: Self.address("10.20.1.5"), port: 22, requestedHost: "10.20.1.5")
        #expect(otherPort?.contains("group \"contractors\": no Allow rule matches") == true, "\(otherPort ?? "allowed")")
        #expect(bob.refusal(forAddress: Self.address("10.30.0.1"), port: 443, requestedHost: "10.30.0.1") != nil)
        let denied = bob.refusal(forAddress: Self.address("10.20.9.1"), port: 443, requestedHost: "10.20.9.1")
        #expect(denied?.contains("group \"ip-only\": Deny rule") == true, "\(denied ?? "allowed")")
        #expect(bob.refusal(forHost: "db.example.com", port: 443) == nil, "an address rule may still allow a name once resolved")
        #expect(bob.refusal(forHost: "db.example.com", port: 80) != nil)
    }

    @Test func appLayerAndTunnelLimitsTakeTheStrictestGroup() throws {
        let rules = try Self.rules(Self.example)
        let bob = rules.profile(for: "bob")
        #expect(!bob.appLayer && bob.tunnels == 2)
        #expect(bob.appLayerRefusal?.contains("group \"ip-only\"") == true)
        #expect(rules.profile(for: "alice").appLayerRefusal == nil)
        var off = rules
        off.appLayer = false
        #expect(off.profile(for: "alice").appLayerRefusal?.contains("Server.AppLayer false") == true)
        #expect(off.profile(for: nil).appLayerRefusal != nil, "the server's setting holds without logins too")
    }

    @Test func expiredAndDisabledLoginsAreRefusedWithTheirReason() throws {
        let rules = try Self.rules(Self.example)
        let friday = Date(timeIntervalSince1970: 1_796_407_200)
        #expect(rules.loginRefusal(for: "guest", now: friday - 1) == nil)
        #expect(rules.loginRefusal(for: "guest", now: friday)?.description == "expired 2026-12-04T18:00:00Z")
        #expect(rules.loginRefusal(for: "mallory")?.description == "disabled")
        #expect(rules.loginRefusal(for: "alice") == nil && rules.loginRefusal(for: "carol") == nil)
        let none = try Self.rules([:])
        #expect(rules.hasExpiries && !none.hasExpiries)
    }

    @Test(arguments: [
        (["Groups": .dictionary(["staff": .dictionary([:])]), "Users": .dictionary(["bob": .dictionary(["Groups": .strings(["stafff"])])])],
         #"Server.Users.bob.Groups[0]: expected the name of a group in Server.Groups, got "stafff" (no such group; did you mean staff?; known groups: staff)"#),
        (["Users": .dictionary(["bob": .dictionary(["Groups": .strings(["staff"])])])],
         #"Server.Users.bob.Groups[0]: expected the name of a group in Server.Groups, got "staff" (no such group; Server.Groups defines none)"#),
        (["Groups": .dictionary(["staff": .dictionary(["Policy": AccessRulesTests.policy(allow: ["10.0.0.0/33"])])])],
         "Server.Groups.staff.Policy.Allow[0]: expected a destination rule"),
        (["Users": .dictionary(["guest": .dictionary(["Expires": .string("next Friday")])])],
         #"Server.Users.guest.Expires: expected a date, <date>2026-12-04T18:00:00Z</date> (or that text as a string), got "next Friday""#),
        (["Users": .dictionary(["guest": .dictionary(["Expires": 5])])], "Server.Users.guest.Expires: expected a date"),
        (["Groups": .dictionary(["staff": .dictionary(["Limits": .dictionary(["Tunnels": 0])])])],
         "Server.Groups.staff.Limits.Tunnels: expected a positive integer (1 to 1000000), got 0"),
        (["Groups": .dictionary(["staff": .dictionary(["Limits": .dictionary(["Tunnels": -3])])])],
         "Server.Groups.staff.Limits.Tunnels: expected a positive integer (1 to 1000000), got -3"),
        (["Groups": .dictionary(["staff": .dictionary(["Polcy": AccessRulesTests.policy()])])],
         "Server.Groups.staff.Polcy: unknown key (did you mean Policy?); known keys here: Policy, AppLayer, Limits, Routes, DNS"),
        (["Groups": .dictionary(["staff": .dictionary(["Limits": .dictionary(["BandwidthMBit": 5])])])],
         "Server.Groups.staff.Limits.BandwidthMBit: unknown key (did you mean BandwidthMbit?); known keys here: Tunnels, BandwidthMbit"),
        (["Groups": .dictionary(["staff": .dictionary(["Limits": .dictionary(["Bytes": 5])])])],
         "Server.Groups.staff.Limits.Bytes: unknown key; known keys here: Tunnels, BandwidthMbit"),
        (["Users": .dictionary(["bob": .dictionary(["Group": .strings([])])])],
         "Server.Users.bob.Group: unknown key (did you mean Groups?); known keys here: Groups, Expires, Disabled, IPv4Address, IPv6Address"),
        (["Users": .dictionary(["bob": .dictionary(["IPv4Address": .string("192.168.3.5")])])],
         #"Server.Users.bob.IPv4Address: 192.168.3.5 of login "bob" is outside the IPv4 pool 192.168.2.2-192.168.2.10"#),
        (["Users": .dictionary(["alice": .dictionary(["IPv4Address": .string("192.168.2.5")]), "bob": .dictionary(["IPv4Address": .string("192.168.2.5")])])],
         #"Server.Users.bob.IPv4Address: 192.168.2.5 is the fixed address of both "alice" and "bob"; give each login its own"#),
        (["Users": .dictionary(["bob": .dictionary(["IPv6Address": .string("fd00:90::5")])])],
         "Server.Users.bob.IPv6Address: fd00:90::5 is an IPv6 address, but the server leases no IPv6"),
        (["Users": .dictionary(["bob": .dictionary(["IPv4Address": .string("192.168.2")])])],
         #"Server.Users.bob.IPv4Address: expected an IPv4 address such as 192.168.2.2, got "192.168.2""#),
        (["Users": .dictionary(["bob": .dictionary(["Disabled": .string("yes")])])], "Server.Users.bob.Disabled: expected true (the login is refused) or false"),
        (["Users": .dictionary(["bad login": .dictionary([:])])], "Server.Users.bad login: expected a login passwd could have made"),
        (["AppLayer": .string("no")], "Server.AppLayer: expected true"),
    ] as [([String: PropertyListValue], String)])
    func badInputNamesItsKeyPathAndWhatWasMeant(server: [String: PropertyListValue], message: String) {
        let thrown = #expect(throws: ConfigurationError.self) { try Self.rules(server) }
        #expect(thrown?.description.hasPrefix(message) == true, "\(thrown.map(\.description) ?? "nothing thrown")")
    }

    @Test func fixedAddressesAreReadAndKeyedAsThePoolsKeyTheirClients() throws {
        var configuration = SampleConfiguration.withServer([
            "Users": .dictionary([
                "build": .dictionary(["IPv4Address": .string("192.168.2.9"), "IPv6Address": .string("fd00:90::9")]),
                "alice": .dictionary(["IPv4Address": .string("192.168.2.2")]),
            ])
        ])
        guard case .dictionary(var top) = configuration else { return }
        top["IPv6"] = .dictionary(["Pool": .dictionary(["StartAddress": .string("fd00:90::2"), "EndAddress": .string("fd00:90::ff")])])
        configuration = .dictionary(top)
        let rules = try TunnelServerConfiguration(propertyList: configuration).server.access
        #expect(rules.users["build"]?.ipv4Address == IPv4Address("192.168.2.9") && rules.users["build"]?.ipv6Address == IPv6Address("fd00:90::9"))
        let fixed = rules.fixedAddresses
        #expect(fixed.ipv4 == ["login:build": IPv4Address(192, 168, 2, 9), "login:alice": IPv4Address(192, 168, 2, 2)])
        #expect(fixed.ipv6.count == 1 && fixed.ipv6["login:build"] == IPv6Address("fd00:90::9"))
        // An address at the pool's edge is inside it; one past it is refused.
        top["Server"] = .dictionary(["Users": .dictionary(["edge": .dictionary(["IPv6Address": .string("fd00:90::100")])])])
        let thrown = #expect(throws: ConfigurationError.self) { try TunnelServerConfiguration(propertyList: .dictionary(top)) }
        #expect(thrown?.description.contains("outside the IPv6 pool fd00:90::2-fd00:90::ff") == true, "\(thrown.map(\.description) ?? "")")
    }

    @Test func aChangedFixedAddressIsNamedAndItsLoginsTunnelsAreToEnd() throws {
        let before = try Self.rules(Self.example)
        var after = before
        after.users["alice"]?.ipv4Address = IPv4Address(192, 168, 2, 7)
        after.users["build"] = AccessRules.User(ipv4Address: IPv4Address(192, 168, 2, 9))
        #expect(after.changes(from: before) == [
            #"login "alice": fixed address none → 192.168.2.7 (its IP tunnels end, so it reconnects to it)"#,
            #"login "build": added (groups none, fixed address 192.168.2.9)"#,
        ])
        #expect(after.loginsWhoseFixedAddressChanged(from: before) == ["alice", "build"])
        var same = after
        same.users["alice"]?.groups = ["contractors"]
        #expect(same.loginsWhoseFixedAddressChanged(from: after).isEmpty)
    }

    @Test func aLoginWithNoPasswordIsAWarningNotARefusal() throws {
        let rules = try Self.rules(Self.example)
        var users = UserDatabase()
        for login in ["alice", "bob", "guest"] {
            users.set(login, hash: try PasswordHash(password: "pw", iterations: PasswordHash.minimumIterations))
        }
        #expect(rules.loginsWithoutPassword(in: users) == [
            #"Server.Users.mallory: the users file has no password for "mallory"; its entry applies only once the login is added (tunnel-server passwd mallory)"#
        ])
        #expect(rules.loginsWithoutPassword(in: nil).first?.contains("the server takes no logins") == true)
        #expect(AccessRules.none.loginsWithoutPassword(in: nil).isEmpty)
    }

    @Test func aReloadSaysWhatChangedPerGroupAndLogin() throws {
        let before = try Self.rules(Self.example)
        var after = before
        after.users["bob"]?.groups = ["staff"]
        after.users["mallory"]?.disabled = false
        after.users["guest"] = nil
        after.users["dave"] = AccessRules.User(groups: ["contractors"], expires: Date(timeIntervalSince1970: 1_796_407_200))
        after.groups["contractors"]?.tunnels = 1
        after.groups["contractors"]?.policy = DestinationPolicy.allowAll
        after.groups["temps"] = AccessRules.Group(appLayer: false)
        #expect(after.changes(from: before) == [
            #"group "contractors": policy changed, Tunnels 2 → 1"#,
            #"group "temps": added"#,
            #"login "bob": groups contractors,ip-only → staff"#,
            #"login "dave": added (groups contractors, expires 2026-12-04T18:00:00Z)"#,
            #"login "guest": removed (no groups)"#,
            #"login "mallory": enabled"#,
        ])
        #expect(before.changes(from: before).isEmpty)
    }

    @Test func packetsMeetTheGroupsAllowAndDenyLists() throws {
        let rules = try Self.rules(Self.example)
        let access = ServerAccess(rules)
        #expect(access.packetFilter(for: "alice") == nil, "staff has no policy: nothing to check per packet")
        #expect(access.packetFilter(for: "carol") == nil && access.packetFilter(for: nil) == nil)
        let bob = try #require(access.packetFilter(for: "bob"))
        #expect(bob.verdict(for: IPv4Address(10, 20, 1, 5), port: .port(443)) == .allowed)
        #expect(bob.verdict(for: IPv4Address(10, 20, 1, 5), port: .port(22)) == .refused)
        #expect(bob.verdict(for: IPv4Address(10, 30, 0, 1), port: .port(443)) == .refused)
        #expect(bob.verdict(for: IPv4Address(10, 20, 9, 1), port: .port(443)) == .refused, "the other group's Deny")
        #expect(bob.verdict(for: IPv4Address(10, 20, 1, 5), port: .undeterminable(.truncated)) == .portUndeterminable)
        #expect(bob.verdict(for: IPv6Address(ipv4Mapped: IPv4Address(10, 30, 0, 1)), port: .port(443)) == .refused)
        // A reload moving bob to staff lifts them for his next batch.
        var moved = rules
        moved.users["bob"]?.groups = ["staff"]
        access.replace(with: moved)
        #expect(access.packetFilter(for: "bob") == nil)
    }

    @Test func theRefusalReasonTravelsBesideResultThreeAndNothingElse() throws {
        for detail in TunnelLoginRefusalDetail.allCases {
            let message = TunnelMessage.authenticateResult(.refused, detail: detail)
            #expect(try TunnelMessage(propertyList: message.propertyList) == message)
        }
        // Unknown details are dropped, and a detail beside an acceptance means nothing.
        let unknown = PropertyListValue.dictionary(["identifier": 0, "command": 11, "result-code": 3, "result-detail": 99])
        #expect(try TunnelMessage(propertyList: unknown) == .authenticateResult(.refused))
        let accepted = PropertyListValue.dictionary(["identifier": 0, "command": 11, "result-code": 0, "result-detail": 1])
        #expect(try TunnelMessage(propertyList: accepted) == .authenticateResult(.success))
        #expect(TunnelMessage.authenticateResult(.refused).propertyList == .dictionary(["identifier": 0, "command": 11, "result-code": 3]))
        #expect(TunnelLoginRefusedError(login: "guest", detail: .expired).description.contains("this login has expired"))
        #expect(TunnelLoginRefusedError(login: "bob", detail: .disabled).description.contains("has been disabled"))
        #expect(!TunnelLoginRefusedError(login: "bob", detail: .disabled).description.contains("wrong"))
    }
}
