import NIOConcurrencyHelpers
import NIOCore
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// Records the batches a `PacketFlow` delivers and on which event loop.
final class PacketCollector: Sendable {
    private let batchesBox = NIOLockedValueBox<[[ByteBuffer]]>([])
    private let offLoopBox = NIOLockedValueBox(0)

    /// A `deliver` closure that checks it runs on `eventLoop`.
    func deliver(expecting eventLoop: EventLoop) -> @Sendable ([TunnelPacket]) -> Void {
        { batch in
            if !eventLoop.inEventLoop { self.offLoopBox.withLockedValue { $0 += 1 } }
            self.superPacketsBox.withLockedValue { $0.append(contentsOf: batch.filter(\.isSuperPacket)) }
            self.batchesBox.withLockedValue { $0.append(batch.map(\.bytes)) }
        }
    }

    /// The super-packets delivered, with their segment sizes.
    var superPackets: [TunnelPacket] { superPacketsBox.withLockedValue { $0 } }
    private let superPacketsBox = NIOLockedValueBox<[TunnelPacket]>([])

    var batches: [[ByteBuffer]] { batchesBox.withLockedValue { $0 } }
    var packets: [ByteBuffer] { batches.flatMap { $0 } }
    var deliveriesOffTheLoop: Int { offLoopBox.withLockedValue { $0 } }
}

/// Packets whose bytes say which one they are: `[index high, index low, filler...]`.
func numberedPackets(_ count: Int, size: Int = 40) -> [ByteBuffer] {
    (0..<count).map { index in
        ByteBuffer(bytes: [UInt8(index >> 8), UInt8(index & 0xFF)] + [UInt8](repeating: 0x45, count: size - 2))
    }
}

func packetNumber(_ packet: ByteBuffer) -> Int {
    Int(packet.getInteger(at: packet.readerIndex, as: UInt16.self) ?? .max)
}

extension PacketFlow {
    /// Ordinary packets, as most tests write them.
    func writePackets(_ packets: [ByteBuffer]) {
        writePackets(packets.map { TunnelPacket(bytes: $0) })
    }
}
