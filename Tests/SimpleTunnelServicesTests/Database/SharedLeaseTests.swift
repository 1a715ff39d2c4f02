import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Several servers: leases and sessions shared in PostgreSQL", .timeLimit(.minutes(3)))
struct SharedLeaseTests {
    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func twoHundredClientsAtOnceOverTwoServersGetTwoHundredDifferentAddresses() async throws {
        // Every lease waits its turn on one lock: on a loaded machine the last may wait seconds.
        try await SharedDatabaseCluster.with(timeout: .seconds(60)) { cluster in
            let clients = 200
            let addresses = try await withThrowingTaskGroup(of: (RawTunnelPeer, Result<String, RawTunnelPeer.OpenRefusal>).self) { group in
                for index in 0..<clients {
                    let member = cluster.members[index % cluster.members.count]
                    group.addTask {
                        let peer = try await member.fixture.peer()
                        return (peer, try await peer.openIP())
                    }
                }
                var peers: [RawTunnelPeer] = []
                var addresses: [String] = []
                for try await (peer, result) in group {
                    peers.append(peer)
                    if case .success(let address) = result { addresses.append(address) } else { Issue.record("an open failed: \(result)") }
                }
                #expect(cluster.members.map(\.layer.pool.leasedCount).reduce(0, +) == clients)
                #expect(cluster.members.allSatisfy { $0.layer.pool.leasedCount > 0 }, "both servers took clients")
                for peer in peers { await peer.close() }
                return addresses
            }
            #expect(addresses.count == clients)
            #expect(Set(addresses).count == clients, "an address was handed out twice")
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aClientMovingToTheOtherServerKeepsItsAddressAndItsOldSessionEnds() async throws {
        try await SharedDatabaseCluster.with(logins: ["alice", "bob"]) { cluster in
            let (a, b) = (cluster.members[0], cluster.members[1])
            let aliceOnA = try await LeaseTests.login(a.fixture, as: "alice")
            let address = try await aliceOnA.openIP().get()
            let bobOnB = try await LeaseTests.login(b.fixture, as: "bob")
            #expect(try await bobOnB.openIP().get() != address)

            // Alice's next tunnel lands on the other server (a load balancer's choice).
            let moved = ContinuousClock.now
            let aliceOnB = try await LeaseTests.login(b.fixture, as: "alice")
            #expect(try await aliceOnB.openIP().get() == address)
            #expect(await aliceOnA.waitForClose(timeout: .seconds(5)), "the old session on the first server was not ended")
            print("a session moved to another server: the old one ended \(ContinuousClock.now - moved) after the new tunnel began")
            for _ in 0..<250 where a.layer.pool.leasedCount > 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(a.layer.pool.leasedCount == 0, "the first server still holds alice's address")

            // Packets for alice's address now go to the second server's tunnel.
            b.device.inject([ipv4Packet(from: "198.18.2.2", to: address)])
            guard case .packets(1, let packets)? = await aliceOnB.next() else {
                Issue.record("the moved session got no packets")
                return
            }
            #expect(packets.count == 1)
            #expect(try await cluster.count("SELECT count(*)::bigint FROM simpletunnel_sessions") == 2)

            // A wrong password is refused from the database's records too.
            let wrong = try await RawTunnelPeer.connect(
                port: a.fixture.port, group: a.fixture.group, sending: .authenticate(login: "alice", password: "not-hers"))
            #expect(await wrong.next() == .authenticateResult(.refused))
            for peer in [aliceOnB, bobOnB, wrong] { await peer.close() }
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func whileTheDatabaseIsDownTunnelsCarryOnAndNewLoginsWaitUntilItIsBack() async throws {
        try await SharedDatabaseCluster.with(logins: ["alice", "bob", "carol"]) { cluster in
            let (a, b) = (cluster.members[0], cluster.members[1])
            let alice = try await LeaseTests.login(a.fixture, as: "alice")
            let aliceAddress = try await alice.openIP().get()
            let bob = try await LeaseTests.login(b.fixture, as: "bob")
            let bobAddress = try await bob.openIP().get()

            try await cluster.postgres.stopServerOffThePool()
            // A new login is neither accepted nor refused: the tunnel closes and the client tries again later.
            let early = try await RawTunnelPeer.connect(
                port: a.fixture.port, group: a.fixture.group, sending: .authenticate(login: "carol", password: "pw-carol"))
            #expect(await early.next(timeout: .seconds(30)) == nil)
            #expect(await early.waitForClose())
            #expect(cluster.log.all.contains { $0.message.hasPrefix("database outage") }, "no log line said why")

            // Tunnels already up carry packets both ways.
            a.device.inject([ipv4Packet(from: "198.18.2.2", to: aliceAddress)])
            guard case .packets(1, let inbound)? = await alice.next() else {
                Issue.record("alice's tunnel stopped carrying packets while the database was down")
                return
            }
            #expect(inbound.count == 1)
            let outbound = ipv4Packet(from: bobAddress, to: "198.18.2.2")
            try await bob.send(.packets(identifier: 1, packets: [TunnelPacket(bytes: outbound, protocolNumber: 2)]))
            for _ in 0..<250 where b.device.written.isEmpty {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(b.device.written == [outbound])

            try await cluster.postgres.startServerOffThePool()
            // The pools reconnect on their own; carol gets in and gets an address of her own.
            var carolAddress: String?
            for _ in 0..<60 where carolAddress == nil {
                let carol = try await RawTunnelPeer.connect(
                    port: a.fixture.port, group: a.fixture.group, sending: .authenticate(login: "carol", password: "pw-carol"))
                if await carol.next(timeout: .seconds(30)) == .authenticateResult(.success) {
                    carolAddress = try await carol.openIP().get()
                } else {
                    try await Task.sleep(for: .milliseconds(500))
                }
                await carol.close()
            }
            #expect(carolAddress != nil, "logins did not resume once the database was back")
            #expect(carolAddress != aliceAddress && carolAddress != bobAddress)
            for peer in [alice, bob, early] { await peer.close() }
        }
    }

    @Test(.enabled(if: TestRequirements.met(ThrowawayPostgres.isAvailable, ThrowawayPostgres.requirement)))
    func aLeaseAskedForWhileTheDatabaseIsDownIsRefusedWithResultFiveAndNoAddress() async throws {
        try await SharedDatabaseCluster.with(servers: 1) { cluster in
            let server = cluster.members[0]
            let first = try await server.fixture.peer()
            _ = try await first.openIP().get()
            try await cluster.postgres.stopServerOffThePool()
            let second = try await server.fixture.peer()
            #expect(try await second.openIP() == .failure(.init(result: .internalError)))
            #expect(server.layer.pool.leasedCount == 1, "an address the database did not confirm was handed out")
            try await cluster.postgres.startServerOffThePool()
            var leased = false
            for identifier in 2..<62 where !leased {
                leased = (try? await second.openIP(TunnelConnectionIdentifier(identifier)).get()) != nil
                if !leased { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(leased, "leases did not resume once the database was back")
            for peer in [first, second] { await peer.close() }
        }
    }
}
