import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import SimpleTunnelServices

/// The allowance past `suspend` is per flow and per tunnel (PROTOCOL.md A4:
/// 16 and 64 MiB by default): flows each within their own allowance still
/// hold the peer back once together they pass the tunnel's.
@Suite("A tunnel's allowance past suspend, over all its flows", .timeLimit(.minutes(3)))
struct TunnelSuspendAllowanceTests {
    @Test func theDefaultsAreTheDocumentedOnes() {
        #expect(TunnelMultiplexer.Limits().suspendAllowance == 16 * 1024 * 1024)
        #expect(TunnelMultiplexer.Limits().tunnelSuspendAllowance == 64 * 1024 * 1024)
    }

    @Test func flowsWithinTheirOwnAllowanceAreHeldBackTogetherAndLoseNothing() async throws {
        let budget = ServerBufferBudget(limit: 256 * 1024 * 1024)
        let tunnelAllowance = 1024 * 1024
        let fixture = try await RawServerFixture.start { settings in
            settings.bufferBudget = budget
            // Far above what either flow sends: only the tunnel's total can hold the peer.
            settings.multiplexerLimits.suspendAllowance = 64 * 1024 * 1024
            settings.multiplexerLimits.tunnelSuspendAllowance = tunnelAllowance
        }
        // Well past what the kernel buffers of the destinations' sockets take, so the server must hold the rest.
        let count = 24 * 1024 * 1024
        var destinations: [(channel: Channel, received: EventLoopFuture<SlowReader.Received>)] = []
        for _ in 0..<2 {
            let received = fixture.group.next().makePromise(of: SlowReader.Received.self)
            let channel = try await SlowReader.listen(interval: .milliseconds(2), readSize: 16 * 1024, done: received, group: fixture.group)
            destinations.append((channel, received.futureResult))
        }
        let peak = BudgetPeak(budget)
        let peer = try await fixture.peer()
        for (index, destination) in destinations.enumerated() {
            let identifier = TunnelConnectionIdentifier(1 + 2 * index)
            try await peer.send(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: try #require(destination.channel.localAddress?.port)))))
            #expect(await peer.next() == .openResult(identifier: identifier, result: .success))
        }
        let payload = LoopbackPeers.payload(count)
        // Interleaved, as a peer that ignores suspend sends for two busy flows.
        var slices = [payload, payload]
        while slices[0].readableBytes > 0 {
            for index in 0..<2 {
                if let chunk = slices[index].readSlice(length: min(256 * 1024, slices[index].readableBytes)) {
                    try await peer.sendData(chunk, for: TunnelConnectionIdentifier(1 + 2 * index))
                }
            }
        }
        try await peer.send(.close(identifier: 1, direction: .write), .close(identifier: 3, direction: .write))
        var delivered: [SlowReader.Received] = []
        for destination in destinations {
            delivered.append(try await destination.received.get())
        }
        #expect(delivered.map(\.count) == [count, count])
        let sent = SHA256Hasher()
        payload.withUnsafeReadableBytes { sent.update($0) }
        let sentDigest = sent.finish().map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
        #expect(delivered.map(\.sha256) == [sentDigest, sentDigest], "each flow delivered exactly the bytes sent")
        #expect(peer.channel.isActive, "held back, never cut off")
        // What the server held stayed near the tunnel's allowance (plus what one read brings in, and a frame),
        // far below the 48 MiB the flows' own allowances would have let it take.
        let held = peak.stop()
        #expect(held > 0)
        #expect(held <= tunnelAllowance + 1024 * 1024 + 128 * 1024, "the server held \(held) bytes past suspend")
        for destination in destinations { try? await destination.channel.close() }
        await peer.close()
        await fixture.stop()
    }
}
