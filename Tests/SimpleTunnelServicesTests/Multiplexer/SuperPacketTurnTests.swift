import Logging
import NIOCore
import NIOEmbedded
import SimpleTunnelWire
import Testing
@testable import SimpleTunnelServices

/// A super-packet never takes more than one turn of the tunnel: on a slow
/// link (a small turn) a longer one goes to the peer as its segments, on a
/// fast one it crosses whole.
@Suite("IP flows: super-packets longer than the tunnel's turn go as their segments")
struct SuperPacketTurnTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()
    let metrics = PacketDropCounter()

    /// A super-packet of `payload` bytes in 1,300-byte segments.
    static func superPacket(payload: Int, cut: Int = 0) -> TunnelPacket {
        let bytes = TCPTestFlow(isIPv4: true).superPacket(sequence: 9, payload: TCPTestFlow.payload(payload), flags: TCPTestFlow.ack)
        return TunnelPacket(bytes: ByteBuffer(bytes: bytes.dropLast(cut)), segmentSize: 1300)
    }

    /// What the peer receives after the device read `packets`, with the tunnel's turn at `turn` bytes.
    func sent(_ packets: [TunnelPacket], turn: Int) -> [TunnelPacket] {
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, metrics: metrics, logger: Logger(label: "test"))
        let identifier = multiplexer.openFlow(.plainIP, endpoint: { _ in .ip(RecordingPacketEndpoint()) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        multiplexer.turnBytes = turn
        let before = output.written.count
        multiplexer.flow(identifier, didReadPackets: packets)
        loop.run()
        return output.written.dropFirst(before).flatMap { message -> [TunnelPacket] in
            guard case .packets(identifier, let packets) = message else { return [] }
            return packets
        }
    }

    @Test func onASlowLinkALongSuperPacketGoesAsItsSegmentsAndAShortOneWhole() {
        let long = Self.superPacket(payload: 4 * 1300 + 7)
        let short = Self.superPacket(payload: 2 * 1300)
        let plain = TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 20))
        let packets = sent([long, short, plain], turn: 4096)
        #expect(packets.count == 5 + 1 + 1, "the long one's five segments, then the short one and the plain packet")
        #expect(packets.prefix(5).allSatisfy { !$0.isSuperPacket })
        let segments = packets.prefix(5).map { Array($0.bytes.readableBytesView) }
        #expect(segments.allSatisfy(TCPTestChecks.checksumsVerify))
        let payload: [UInt8] = segments.flatMap { TCPTestChecks.payload($0) }
        #expect(payload == TCPTestFlow.payload(4 * 1300 + 7), "in order, nothing lost")
        let sequences: [UInt32] = segments.map { TCPTestChecks.sequence($0) }
        #expect(sequences == [9, 1309, 2609, 3909, 5209])
        #expect(packets[5] == short)
        #expect(packets[6] == plain)
        #expect(metrics.uncut == 0)
    }

    @Test func onAFastLinkEverySuperPacketCrossesWhole() {
        let long = Self.superPacket(payload: 40 * 1300)
        #expect(sent([long], turn: 64 * 1024) == [long])
    }

    @Test func aLongSuperPacketThatDoesNotHoldTogetherIsDroppedAndCounted() {
        let broken = Self.superPacket(payload: 4 * 1300, cut: 100)
        let plain = TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 20))
        #expect(sent([broken, plain], turn: 4096) == [plain])
        #expect(metrics.uncut == 1)
    }
}
