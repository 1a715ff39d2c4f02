import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("An IP flow's packet queue")
struct PacketQueueTests {
    func packets(_ sizes: [Int], tag: UInt8 = 0x45) -> [TunnelPacket] {
        sizes.map { TunnelPacket(bytes: ByteBuffer(repeating: tag, count: $0)) }
    }

    @Test func aBatchGoesWholeWhenItFitsAndIsCutWhenNotAndItsLeftoverKeepsItsArrival() {
        var queue = PacketQueue()
        let early = NIODeadline.uptimeNanoseconds(10), late = NIODeadline.uptimeNanoseconds(20)
        queue.append(packets([100, 100, 100, 100]), arrived: early)
        queue.append(packets([100, 100], tag: 0x60), arrived: late)
        #expect(queue.bufferedBytes == 600)
        #expect(queue.headArrival == early)
        let cutByCount = queue.popMessage(maximumCount: 3, maximumBytes: 10_000)
        #expect(cutByCount.map(\.bytes.readableBytes) == [100, 100, 100])
        #expect(queue.headArrival == early, "the batch's leftover keeps its arrival")
        #expect(queue.bufferedBytes == 300)
        let leftover = queue.popMessage(maximumCount: 3, maximumBytes: 10_000)
        #expect(leftover.count == 1 && leftover.first?.bytes.getInteger(at: 0, as: UInt8.self) == 0x45)
        #expect(queue.headArrival == late)
        let cutByBytes = queue.popMessage(maximumCount: 64, maximumBytes: 150)
        #expect(cutByBytes.count == 1, "the byte bound cuts the batch")
        let rest = queue.popMessage(maximumCount: 64, maximumBytes: 150)
        #expect(rest.count == 1 && rest.first?.bytes.getInteger(at: 0, as: UInt8.self) == 0x60, "in order")
        #expect(queue.isEmpty && queue.bufferedBytes == 0 && queue.headArrival == nil)
    }

    @Test func aPacketLargerThanTheByteBoundGoesAlone() {
        var queue = PacketQueue()
        queue.append(packets([60_000, 10]), arrived: .uptimeNanoseconds(1))
        let large = queue.popMessage(maximumCount: 64, maximumBytes: 1000)
        #expect(large.map(\.bytes.readableBytes) == [60_000])
        let small = queue.popMessage(maximumCount: 64, maximumBytes: 1000)
        #expect(small.map(\.bytes.readableBytes) == [10])
    }

    @Test func droppingTheOldestBatchCountsItsPacketsAndBytes() {
        var queue = PacketQueue()
        queue.append(packets([10, 20, 30]), arrived: .uptimeNanoseconds(1))
        queue.append(packets([40]), arrived: .uptimeNanoseconds(2))
        queue.append([], arrived: .uptimeNanoseconds(3))
        let first = queue.dropFirstBatch()
        #expect(first == 3)
        #expect(queue.bufferedBytes == 40)
        let second = queue.dropFirstBatch()
        #expect(second == 1)
        let none = queue.dropFirstBatch()
        #expect(none == 0, "an empty batch was never queued")
        #expect(queue.isEmpty)
    }
}
