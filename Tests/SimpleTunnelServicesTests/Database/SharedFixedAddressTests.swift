import Foundation
import Testing
@testable import SimpleTunnelServices

/// `Server.Users.<login>.IPv4Address` on servers sharing one PostgreSQL: the
/// login gets its address from either server, and no one else ever does.
@Suite("Fixed addresses shared in PostgreSQL", .timeLimit(.minutes(3)))
struct SharedFixedAddressTests {
    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aFixedAddressFollowsItsLoginAcrossServersAndIsNeverHandedToAnother() async throws {
        try await SharedDatabaseCluster.with(logins: ["alice", "bob", "build"]) { cluster in
            let (a, b) = (cluster.members[0], cluster.members[1])
            // The pool's lowest address, which dynamic assignment would hand out first.
            let fixed = FixedAddresses(ipv4: ["login:build": IPv4Address(10, 90, 0, 2)])
            for member in cluster.members { member.layer.pool.reserve(fixed) }

            let alice = try await LeaseTests.login(a.fixture, as: "alice")
            #expect(try await alice.openIP().get() == "10.90.0.3")
            let buildOnB = try await LeaseTests.login(b.fixture, as: "build")
            #expect(try await buildOnB.openIP().get() == "10.90.0.2")
            await buildOnB.close()
            // While build is away its address stays reserved: bob, on the server build left, gets the next one.
            let bob = try await LeaseTests.login(b.fixture, as: "bob")
            #expect(try await bob.openIP().get() == "10.90.0.4")
            let buildOnA = try await LeaseTests.login(a.fixture, as: "build")
            #expect(try await buildOnA.openIP().get() == "10.90.0.2")
            #expect(try await cluster.count("SELECT count(*)::bigint FROM simpletunnel_leases WHERE address = '10.90.0.2'::inet AND client = 'login:build'") == 1)
            for peer in [alice, bob, buildOnA] { await peer.close() }
        }
    }
}
