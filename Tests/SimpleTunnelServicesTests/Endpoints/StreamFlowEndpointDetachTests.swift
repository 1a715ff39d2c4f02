import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// A forgotten flow's socket reports nothing more under its identifier, which
/// the peer may already have opened again (Apple's app proxy reuses `flow.hash`).
@Suite("A TCP flow's socket once its flow is forgotten")
struct StreamFlowEndpointDetachTests {
    @Test func afterDetachNothingReachesTheSinkAndTheCloseIsReportedOnce() throws {
        let sink = RecordingSink()
        let endpoint = StreamFlowEndpoint(reporter: FlowReporter(identifier: 42, sink: sink))
        let channel = EmbeddedChannel(handler: endpoint)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(ByteBuffer(string: "before"))
        #expect(sink.events == ["read 42"])

        var closedCount = 0
        endpoint.detach { closedCount += 1 }
        #expect(closedCount == 0, "the socket is still open")
        // The old destination still talks and then goes away: none of it may reach flow 42's new owner.
        try channel.writeInbound(ByteBuffer(string: "late"))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        _ = try? channel.finish()
        #expect(sink.events == ["read 42"])
        #expect(closedCount == 1)
    }

    @Test func detachingAClosedSocketReportsAtOnce() throws {
        let endpoint = StreamFlowEndpoint(reporter: FlowReporter(identifier: 7, sink: RecordingSink()))
        let channel = EmbeddedChannel(handler: endpoint)
        _ = try? channel.finish()
        var closed = false
        endpoint.detach { closed = true }
        #expect(closed)
    }
}

private final class RecordingSink: FlowEventSink {
    var events: [String] = []
    func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?) { events.append("read \(identifier)") }
    func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier) { events.append("eof \(identifier)") }
    func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool) { events.append("writable \(identifier)") }
    func flowDidClose(_ identifier: TunnelConnectionIdentifier) { events.append("closed \(identifier)") }
    func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket]) {}
}
