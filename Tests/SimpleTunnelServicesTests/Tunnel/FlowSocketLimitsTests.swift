import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Flow sockets a hostile peer cannot pile up", .timeLimit(.minutes(2)))
struct FlowSocketLimitsTests {
    static func open(_ peer: RawTunnelPeer, _ identifier: Int64, port: Int) async throws -> TunnelConnectionOpenResult? {
        try await peer.send(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: port))))
        let answer = await peer.next { message in
            if case .openResult(identifier, _, _, _) = message { return false }
            return true
        }
        guard case .openResult(_, let result, _, _) = answer else { return nil }
        return result
    }

    /// Returns once the server has handled everything `peer` sent before.
    static func barrier(_ peer: RawTunnelPeer) async throws {
        try await peer.send(.fetchConfiguration(identifier: 0))
        _ = await peer.next { message in
            if case .fetchConfiguration = message { return false }
            return true
        }
    }

    static func waitUntil(_ budget: FlowSocketBudget, holds count: Int) async throws -> Bool {
        let deadline = NIODeadline.now() + .seconds(30)
        while NIODeadline.now() < deadline {
            if budget.socketsInUse == count { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return budget.socketsInUse == count
    }

    /// A server with `budget`, and a destination that never reads.
    static func start(budget: FlowSocketBudget, drainTimeout: TimeAmount) async throws -> (RawServerFixture, sinkPort: Int, sink: Channel) {
        let fixture = try await RawServerFixture.start {
            $0.opener.socketBudget = budget
            $0.opener.drainTimeout = drainTimeout
        }
        let sink = try await DestinationServers.nonReading(group: fixture.group)
        return (fixture, sink.localAddress?.port ?? 0, sink)
    }

    @Test func aTunnelPastItsShareIsRefusedAndAnotherTunnelStillGetsFlows() async throws {
        let budget = FlowSocketBudget(serverLimit: 4, tunnelShare: 2)
        let fixture = try await RawServerFixture.start { $0.opener.socketBudget = budget }
        let greedy = try await fixture.peer()
        #expect(try await Self.open(greedy, 1, port: fixture.echoPort) == .success)
        #expect(try await Self.open(greedy, 2, port: fixture.echoPort) == .success)
        #expect(try await Self.open(greedy, 3, port: fixture.echoPort) == .refused)
        let other = try await fixture.peer()
        #expect(try await Self.open(other, 1, port: fixture.echoPort) == .success)
        #expect(try await Self.open(other, 2, port: fixture.echoPort) == .success)
        // The server's four are used: a third tunnel, within its share, is refused too.
        let third = try await fixture.peer()
        #expect(try await Self.open(third, 1, port: fixture.echoPort) == .refused)
        #expect(budget.socketsInUse == 4)
        // A flow closed with nothing unsent frees its socket at once.
        try await greedy.send(.close(identifier: 1, direction: .all))
        #expect(try await Self.waitUntil(budget, holds: 3))
        #expect(try await Self.open(third, 2, port: fixture.echoPort) == .success)
        for peer in [greedy, other, third] { await peer.close() }
        #expect(try await Self.waitUntil(budget, holds: 0))
        await fixture.stop()
    }

    @Test func aClosedFlowWhoseDestinationNeverReadsCountsUntilItIsResetAfterTheDrainLimit() async throws {
        let budget = FlowSocketBudget(serverLimit: 10, tunnelShare: 2)
        // Long enough that a loaded machine answers the checks below before it ends.
        let (fixture, sinkPort, sink) = try await Self.start(budget: budget, drainTimeout: .seconds(10))
        let peer = try await fixture.peer()
        #expect(try await Self.open(peer, 1, port: sinkPort) == .success)
        // More than the kernel's buffers take, then close: the rest waits in the server.
        try await peer.sendData(ByteBuffer(repeating: 7, count: 12 << 20), for: 1)
        try await peer.send(.close(identifier: 1, direction: .all))
        try await Self.barrier(peer)
        // The draining socket still counts against this tunnel's share of two.
        #expect(budget.socketsInUse == 1)
        #expect(try await Self.open(peer, 2, port: fixture.echoPort) == .success)
        #expect(try await Self.open(peer, 3, port: fixture.echoPort) == .refused)
        // Reset after the drain limit: only flow 2 is left, and there is room again.
        #expect(try await Self.waitUntil(budget, holds: 1))
        #expect(try await Self.open(peer, 4, port: fixture.echoPort) == .success)
        await peer.close()
        try await sink.close()
        await fixture.stop()
    }

    @Test func aClosedTunnelLeavesNoFlowSocketOpen() async throws {
        let budget = FlowSocketBudget(serverLimit: 100, tunnelShare: 50)
        let (fixture, sinkPort, sink) = try await Self.start(budget: budget, drainTimeout: .seconds(2))
        let peer = try await fixture.peer()
        for identifier in Int64(1)...3 {
            #expect(try await Self.open(peer, identifier, port: sinkPort) == .success)
            try await peer.sendData(ByteBuffer(repeating: 7, count: 8 << 20), for: identifier)
        }
        #expect(try await Self.open(peer, 4, port: fixture.echoPort) == .success)
        try await Self.barrier(peer)
        #expect(budget.socketsInUse == 4)
        await peer.close()
        // Every socket is closed for real (NIO's closeFuture), stuck ones included.
        #expect(try await Self.waitUntil(budget, holds: 0))
        try await sink.close()
        await fixture.stop()
    }

    @Test func udpSocketsCountToo() async throws {
        let budget = FlowSocketBudget(serverLimit: 1, tunnelShare: 1)
        let fixture = try await RawServerFixture.start { $0.opener.socketBudget = budget }
        let echo = try await LoopbackPeers.udpEchoServer(group: fixture.group)
        let peer = try await fixture.peer()
        try await peer.send(
            .open(identifier: 1, request: .udp),
            .data(identifier: 1, payload: ByteBuffer(string: "ping"), endpoint: TunnelEndpoint(host: "127.0.0.1", port: echo.localAddress?.port ?? 0)))
        #expect(await peer.next() == .openResult(identifier: 1, result: .success))
        // The echo proves the socket was bound.
        guard case .data(1, _, _) = await peer.next() else {
            Issue.record("no echo through the UDP flow")
            return
        }
        #expect(budget.socketsInUse == 1)
        #expect(try await Self.open(peer, 2, port: fixture.echoPort) == .refused)
        try await peer.send(.open(identifier: 3, request: .udp))
        #expect(await peer.next() == .openResult(identifier: 3, result: .refused))
        try await peer.send(.close(identifier: 1, direction: .all))
        #expect(try await Self.waitUntil(budget, holds: 0))
        #expect(try await Self.open(peer, 4, port: fixture.echoPort) == .success)
        await peer.close()
        try await echo.close()
        await fixture.stop()
    }

    @Test func dnsQuerySocketsCountAgainstTheServer() async throws {
        let budget = FlowSocketBudget(serverLimit: 1, tunnelShare: 1)
        let silent = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let resolver = try #require(silent.localAddress)
        let fixture = try await RawServerFixture.start {
            $0.opener.socketBudget = budget
            // Long enough that a loaded machine still sees the query's socket before its timeout gives it back.
            $0.dns = DNSForwarder(resolver: resolver, timeout: .seconds(8), sockets: budget.makeServerAccount())
        }
        let peer = try await fixture.peer()
        let query = ByteBuffer(hex: "beef 0100 0001 0000 0000 0000 07 6578616d706c65 03 636f6d 00 0001 0001")
        try await peer.send(.dns(identifier: 5, packet: query))
        try await Self.barrier(peer)
        #expect(try await Self.waitUntil(budget, holds: 1))
        #expect(try await Self.open(peer, 1, port: fixture.echoPort) == .refused)
        // The unanswered query gives its socket back at its timeout.
        #expect(try await Self.waitUntil(budget, holds: 0))
        #expect(try await Self.open(peer, 2, port: fixture.echoPort) == .success)
        await peer.close()
        try await silent.close()
        await fixture.stop()
    }
}
