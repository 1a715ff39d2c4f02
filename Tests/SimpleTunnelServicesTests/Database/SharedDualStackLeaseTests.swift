import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Several servers: IPv6 leases shared in PostgreSQL", .timeLimit(.minutes(3)))
struct SharedDualStackLeaseTests {
    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func clientsOverTwoServersGetDistinctAddressesOfBothFamilies() async throws {
        try await SharedDatabaseCluster.with(timeout: .seconds(60), dualStack: true) { cluster in
            let clients = 40
            let leases = try await withThrowingTaskGroup(of: (RawTunnelPeer, Result<(ipv4: String, ipv6: String), RawTunnelPeer.OpenRefusal>).self) { group in
                for index in 0..<clients {
                    let member = cluster.members[index % cluster.members.count]
                    group.addTask {
                        let peer = try await member.fixture.peer()
                        return (peer, try await peer.openDualStackIP())
                    }
                }
                var peers: [RawTunnelPeer] = []
                var leases: [(ipv4: String, ipv6: String)] = []
                for try await (peer, result) in group {
                    peers.append(peer)
                    if case .success(let lease) = result { leases.append(lease) } else { Issue.record("an open failed: \(result)") }
                }
                #expect(cluster.members.allSatisfy { $0.layer.pool.leasedCount > 0 }, "both servers took clients")
                #expect(try await cluster.count("SELECT count(*)::bigint FROM simpletunnel_ipv6_leases") == clients)
                for peer in peers { await peer.close() }
                return leases
            }
            #expect(leases.count == clients)
            #expect(Set(leases.map(\.ipv4)).count == clients, "an IPv4 address was handed out twice")
            #expect(Set(leases.map(\.ipv6)).count == clients, "an IPv6 address was handed out twice")
            #expect(leases.allSatisfy { $0.ipv6.hasPrefix("fd00:90::") }, "\(leases)")
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aClientMovingToTheOtherServerKeepsBothAddresses() async throws {
        try await SharedDatabaseCluster.with(logins: ["alice", "bob"], dualStack: true) { cluster in
            let (a, b) = (cluster.members[0], cluster.members[1])
            let aliceOnA = try await LeaseTests.login(a.fixture, as: "alice")
            let lease = try await aliceOnA.openDualStackIP().get()
            let bobOnB = try await LeaseTests.login(b.fixture, as: "bob")
            let bobs = try await bobOnB.openDualStackIP().get()
            #expect(bobs.ipv4 != lease.ipv4 && bobs.ipv6 != lease.ipv6)

            let aliceOnB = try await LeaseTests.login(b.fixture, as: "alice")
            let moved = try await aliceOnB.openDualStackIP().get()
            #expect(moved.ipv4 == lease.ipv4 && moved.ipv6 == lease.ipv6)
            #expect(await aliceOnA.waitForClose(timeout: .seconds(5)), "the old session on the first server was not ended")

            // Packets for alice's IPv6 address now go to the second server's tunnel, as protocol 30.
            b.device.inject([IPv6TestPackets.packet(from: "fd00:2::2", to: moved.ipv6)])
            guard case .packets(1, let packets)? = await aliceOnB.next() else {
                Issue.record("the moved session got no IPv6 packets")
                return
            }
            #expect(packets.map(\.protocolNumber) == [TunnelPacket.ProtocolNumber.ipv6])
            for peer in [aliceOnB, bobOnB] { await peer.close() }
        }
    }
}
