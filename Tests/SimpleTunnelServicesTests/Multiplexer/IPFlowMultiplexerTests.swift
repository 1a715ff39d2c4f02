import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// A device that records the packets the multiplexer writes to it.
final class RecordingPacketEndpoint: PacketFlowEndpoint {
    var written: [[TunnelPacket]] = []
    var closed = false
    func writePackets(_ packets: [TunnelPacket]) { written.append(packets) }
    func close() { closed = true }
}

/// Counts the packets the multiplexer reports dropped: for congestion, and
/// super-packets that could not be cut.
final class PacketDropCounter: TunnelMultiplexerMetrics {
    private let count = NIOLockedValueBox(0)
    private let uncutCount = NIOLockedValueBox(0)
    var dropped: Int { count.withLockedValue { $0 } }
    var uncut: Int { uncutCount.withLockedValue { $0 } }
    func packetsDroppedForCongestion(count: Int) { self.count.withLockedValue { $0 += count } }
    func superPacketsDroppedUncut(count: Int) { uncutCount.withLockedValue { $0 += count } }
    func flowOpened(_ kind: TunnelFlowKind) {}
    func flowClosed(_ kind: TunnelFlowKind) {}
    func openResult(_ result: TunnelConnectionOpenResult) {}
    func bytesFromPeer(_ count: Int) {}
    func bytesToPeer(_ count: Int) {}
    func malformedMessage() {}
}

@Suite("IP flows in the multiplexer", .timeLimit(.minutes(3)))
struct IPFlowMultiplexerTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()
    let packet = TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 20))

    @Test func packetsGoBothWaysOnceOpenAndAnyCloseEndsTheFlow() {
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: Logger(label: "test"))
        let device = RecordingPacketEndpoint()
        let identifier = multiplexer.openFlow(.plainIP, endpoint: { _ in .ip(device) }) { _ in }!
        multiplexer.receive(.message(.packets(identifier: identifier, packets: [packet])))
        #expect(device.written.isEmpty, "no packets before the server answers")
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        multiplexer.receive(.message(.packets(identifier: identifier, packets: [packet])))
        #expect(device.written == [[packet]])
        multiplexer.flow(identifier, didReadPackets: [packet])
        loop.run()
        #expect(output.written.last == .packets(identifier: identifier, packets: [packet]))
        // An IP flow has no half-close: a close of one direction ends it.
        multiplexer.receive(.message(.close(identifier: identifier, direction: .write)))
        #expect(device.closed)
        #expect(multiplexer.currentStatistics.openFlows == 0)
    }

    /// The queue of packets for the peer: a batch past half the tunnel's
    /// budget is dropped on arrival; one that waited too long (CoDel) is
    /// dropped when its turn comes; both are counted, and the rest still goes.
    @Test func packetsPastTheQueuesLimitOrWaitingTooLongAreDroppedAndCounted() async throws {
        var limits = TunnelMultiplexer.Limits()
        limits.tunnelBufferBudget = 512 * 1024
        let metrics = PacketDropCounter()
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, limits: limits, metrics: metrics, logger: Logger(label: "test"))
        let identifier = multiplexer.openFlow(.plainIP, endpoint: { _ in .ip(RecordingPacketEndpoint()) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        let sentBefore = output.written.count
        output.capacity = sentBefore
        multiplexer.tunnelWritabilityChanged(false)

        // Four batches of 64 KiB fill the 256 KiB the queue may hold; the fifth is dropped.
        let batch = (0..<4).map { _ in TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 16 * 1024)) }
        for _ in 0..<5 { multiplexer.flow(identifier, didReadPackets: batch) }
        #expect(metrics.dropped == 4)

        // Above CoDel's 5 ms target: the first turn starts its 100 ms interval and sends.
        try await Task.sleep(for: .milliseconds(10))
        func oneTurn() {
            output.capacity = output.written.count + 1
            multiplexer.tunnelWritabilityChanged(true)
            loop.run()
            multiplexer.tunnelWritabilityChanged(false)
        }
        oneTurn()
        #expect(output.written.count == sentBefore + 1)
        #expect(metrics.dropped == 4)
        // A whole interval later the head, still waiting, is dropped; the next batch goes.
        try await Task.sleep(for: .milliseconds(110))
        oneTurn()
        #expect(metrics.dropped == 8)
        #expect(output.written.count == sentBefore + 2)
        #expect(output.written.last == .packets(identifier: identifier, packets: batch))
    }
}
