import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("Server status: totals since start", .timeLimit(.minutes(2)))
struct ServerTotalsTests {
    @Test(.timeLimit(.minutes(3)))
    func totalsSinceStartKeepCountingAfterTunnelsClose() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland", "bob": "builder"])
        let alice = try await server.connect("alice", "wonderland")
        let bob = try await server.connect("bob", "builder")
        await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await server.connect("alice", "looking glass")
        }
        let aliceForward = try await server.forward(through: alice)
        let bobForward = try await server.forward(through: bob)
        #expect(await server.echoes(through: aliceForward))
        #expect(await server.echoes(through: bobForward))

        // The refused connection closes on the server's side in its own time.
        let both = try await Self.status(of: server) { $0.sinceStart.tunnelsClosed == 1 }
        #expect(both.totals.tunnels == 2)
        #expect(both.sinceStart.tunnelsAccepted == 3 && both.sinceStart.tunnelsClosed == 1, "the refused login's connection counts too")
        #expect(both.sinceStart.loginsSucceeded == 2 && both.sinceStart.loginsFailed == 1)
        #expect(both.sinceStart.bytesFromClients >= both.totals.bytesFromClients && both.totals.bytesFromClients >= 20_000)
        #expect(both.sinceStart.bytesToClients >= both.totals.bytesToClients && both.totals.bytesToClients >= 20_000)

        // Alice leaves: the open-now figures drop, the totals since start keep her bytes.
        await aliceForward.close()
        await alice.close()
        let afterAlice = try await Self.status(of: server) { $0.totals.tunnels == 1 }
        #expect(afterAlice.sinceStart.tunnelsAccepted == 3 && afterAlice.sinceStart.tunnelsClosed == 2)
        #expect(afterAlice.totals.bytesFromClients < both.totals.bytesFromClients)
        #expect(afterAlice.sinceStart.bytesFromClients >= both.sinceStart.bytesFromClients)
        #expect(afterAlice.sinceStart.bytesToClients >= both.sinceStart.bytesToClients)

        // Bob moves more, then leaves too: nothing is open, and everything is still counted.
        #expect(await server.echoes(through: bobForward))
        await bobForward.close()
        await bob.close()
        let empty = try await Self.status(of: server) { $0.totals.tunnels == 0 }
        #expect(empty.tunnels.isEmpty && empty.totals.bytesFromClients == 0 && empty.totals.bytesToClients == 0)
        #expect(empty.sinceStart.tunnelsClosed == 3 && empty.sinceStart.loginsSucceeded == 2)
        #expect(empty.sinceStart.bytesFromClients >= afterAlice.sinceStart.bytesFromClients + 10_000)
        #expect(empty.sinceStart.bytesToClients >= afterAlice.sinceStart.bytesToClients + 10_000)
        #expect(empty.text.contains("open now: 0 tunnels"), "\(empty.text)")
        #expect(empty.text.contains("3 tunnels accepted, 3 closed") && empty.text.contains("logins: 2 succeeded, 1 failed"), "\(empty.text)")
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(empty)) as? [String: Any]
        let sinceStart = json?["sinceStart"] as? [String: Any]
        #expect(sinceStart?["tunnelsClosed"] as? Int == 3 && sinceStart?["startedAt"] is String, "\(String(describing: json))")
        await server.stop()
    }

    /// The first status that satisfies `condition`, asked over the control socket; the last one after 10 s.
    static func status(of server: OperatedServer, when condition: (TunnelServerStatus) -> Bool) async throws -> TunnelServerStatus {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let status = try #require(try await server.ask(.init(type: "status")).status)
            if condition(status) || ContinuousClock.now > deadline { return status }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func closedTunnelsAddTheirBytesToTheTotals() {
        var totals = TunnelServerTotals()
        totals.accepted()
        totals.accepted()
        totals.closed(with: TunnelStatistics(bytesFromPeer: 100, bytesToPeer: 1000))
        totals.login(.success)
        totals.login(.failure)
        totals.login(.rateLimited)
        let open = TunnelServerStatus.Tunnel(
            peer: "127.0.0.1:1", since: "", seconds: 0, bytesFromClient: 5, bytesToClient: 50, openFlows: 0)
        let since = totals.sinceStart(startedAt: "then", open: [open])
        #expect(since.tunnelsAccepted == 2 && since.tunnelsClosed == 1)
        #expect(since.bytesFromClients == 105 && since.bytesToClients == 1050)
        #expect(since.loginsSucceeded == 1 && since.loginsFailed == 2)
    }
}
