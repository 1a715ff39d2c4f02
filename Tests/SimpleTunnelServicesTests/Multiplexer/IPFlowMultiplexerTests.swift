import Logging
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

@Suite("IP flows in the multiplexer")
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
}
