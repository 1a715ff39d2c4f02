import Foundation
import Testing
@testable import SimpleTunnelServices

/// `Server.Groups.<g>.Routes` and `DNS`: what a login's IP tunnel is told,
/// over real sockets: its groups' routes (the union of all of them) and DNS
/// instead of the server's, and the server's own for a login in no such group.
@Suite("Routes and DNS per group", .timeLimit(.minutes(3)))
struct GroupPushTests {
    static func route(_ address: String, _ netmask: String) -> PropertyListValue {
        .dictionary(["Address": .string(address), "Netmask": .string(netmask)])
    }

    static let server: [String: PropertyListValue] = [
        "Groups": .dictionary([
            "office": .dictionary([
                "Routes": .dictionary(["IPv4": .array([route("10.20.0.0", "255.255.0.0")])]),
                "DNS": .dictionary(["Servers": .strings(["10.20.0.53"]), "SearchDomains": .strings(["office.example"])]),
            ]),
            "lab": .dictionary(["Routes": .dictionary(["IPv4": .array([route("10.30.0.0", "255.255.0.0"), route("10.20.0.0", "255.255.0.0")])])]),
            "plain": .dictionary([:]),
        ]),
        "Users": .dictionary([
            "alice": .dictionary(["Groups": .strings(["office"])]),
            "bob": .dictionary(["Groups": .strings(["lab"])]),
            "carol": .dictionary(["Groups": .strings(["office", "lab"])]),
            "dave": .dictionary(["Groups": .strings(["plain"])]),
        ]),
    ]

    /// The routes and DNS servers an IP open's answer carries.
    static func pushed(_ peer: RawTunnelPeer) async throws -> (routes: [String], dns: [String]) {
        try await peer.send(.open(identifier: 1, request: .plainIP))
        guard case .openResult(1, .success, let configuration?, _)? = await peer.next(skip: { if case .packets = $0 { true } else { false } }) else {
            return ([], [])
        }
        let routes = configuration["IPv4"]?.dictionaryValue?["Routes"]?.arrayValue?.compactMap { route -> String? in
            guard let entry = route.dictionaryValue, let address = entry["Address"]?.stringValue, let mask = entry["Netmask"]?.stringValue else { return nil }
            return "\(address)/\(mask)"
        } ?? []
        let dns = configuration["DNS"]?.dictionaryValue?["Servers"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return (routes, dns)
    }

    @Test func eachLoginIsToldItsGroupsRoutesAndDNS() async throws {
        var users = UserDatabase()
        for login in ["alice", "bob", "carol", "dave"] {
            users.set(login, hash: try PasswordHash(password: "pw-\(login)", iterations: PasswordHash.minimumIterations))
        }
        // The server's own: routes 198.18.2.0/24, DNS 10.90.0.1 (`IPLayerTests.configuration`).
        let access = try AccessRulesTests.rules(Self.server)
        let (fixture, _, _) = try await IPLayerTests.start(authentication: .init(users: users), access: access)
        var told: [String: (routes: [String], dns: [String])] = [:]
        for login in ["alice", "bob", "carol", "dave"] {
            let peer = try await LeaseTests.login(fixture, as: login)
            told[login] = try await Self.pushed(peer)
            await peer.close()
        }
        #expect(told["alice"]?.routes == ["10.20.0.0/255.255.0.0"] && told["alice"]?.dns == ["10.20.0.53"])
        // No DNS of its own: the server's, reached by a host route beside the group's routes.
        #expect(told["bob"]?.routes == ["10.30.0.0/255.255.0.0", "10.20.0.0/255.255.0.0", "10.90.0.1/255.255.255.255"] && told["bob"]?.dns == ["10.90.0.1"])
        // In both: the union, once each, and the first group's DNS.
        #expect(told["carol"]?.routes == ["10.20.0.0/255.255.0.0", "10.30.0.0/255.255.0.0"] && told["carol"]?.dns == ["10.20.0.53"])
        #expect(told["dave"]?.routes == ["198.18.2.0/255.255.255.0", "10.90.0.1/255.255.255.255"] && told["dave"]?.dns == ["10.90.0.1"])
        await fixture.stop()
    }

    @Test func statusShowsEachTunnelsGroupsAndFixedAddress() async throws {
        var users = UserDatabase()
        for login in ["alice", "bob"] {
            users.set(login, hash: try PasswordHash(password: "pw-\(login)", iterations: PasswordHash.minimumIterations))
        }
        var server = Self.server
        server["Users"] = .dictionary([
            "alice": .dictionary(["Groups": .strings(["office", "lab"]), "IPv4Address": .string("192.168.2.9")]),
            "bob": .dictionary([:]),
        ])
        var access = try AccessRulesTests.rules(server)
        access.users["alice"]?.ipv4Address = IPv4Address(10, 90, 0, 9)
        let (fixture, _, layer) = try await IPLayerTests.start(authentication: .init(users: users), access: access)
        layer.pool.reserve(access.fixedAddresses)
        let alice = try await LeaseTests.login(fixture, as: "alice")
        #expect(try await LeaseTests.openIP(alice) == "10.90.0.9")
        let bob = try await LeaseTests.login(fixture, as: "bob")
        #expect(try await LeaseTests.openIP(bob) == "10.90.0.2")
        let status = await fixture.server.status()
        let rows = Dictionary(status.tunnels.compactMap { tunnel in tunnel.login.map { ($0, tunnel) } }, uniquingKeysWith: { first, _ in first })
        #expect(rows["alice"]?.groups == ["office", "lab"] && rows["alice"]?.fixedAddress == "10.90.0.9")
        #expect(rows["bob"]?.groups == nil && rows["bob"]?.fixedAddress == nil)
        #expect(status.text.contains("groups office,lab  lease 10.90.0.9  fixed 10.90.0.9"), "\(status.text)")
        await alice.close()
        await bob.close()
        await fixture.stop()
    }
}
