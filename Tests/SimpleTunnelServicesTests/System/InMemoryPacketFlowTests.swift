import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("In-memory packet flow (PacketFlow fake)", .timeLimit(.minutes(2)))
struct InMemoryPacketFlowTests {
    let loop = MultiThreadedEventLoopGroup.singleton.next()

    @Test func packetsWaitingBeforeReadingArriveInOrderInBatchesOfAtMost32OnTheLoop() async {
        let flow = InMemoryPacketFlow()
        defer { flow.close() }
        #expect(flow.inject(numberedPackets(70)) == 70)
        let collector = PacketCollector()
        flow.startReading(on: loop, collector.deliver(expecting: loop))
        #expect(await Loopback.waitUntil(seconds: 10) { collector.packets.count == 70 })
        #expect(collector.batches.map(\.count) == [32, 32, 6])
        #expect(collector.packets.map(packetNumber) == Array(0..<70))
        #expect(collector.deliveriesOffTheLoop == 0)
        #expect(flow.counters.packetsRead == 70)
        #expect(flow.counters.bytesRead == 70 * 40)
    }

    @Test func injectionsAfterReadingStartedKeepTheirOrder() async {
        let flow = InMemoryPacketFlow()
        defer { flow.close() }
        let collector = PacketCollector()
        flow.startReading(on: loop, collector.deliver(expecting: loop))
        let all = numberedPackets(100)
        for start in stride(from: 0, to: 100, by: 7) {
            flow.inject(Array(all[start..<min(start + 7, 100)]))
        }
        #expect(await Loopback.waitUntil(seconds: 10) { collector.packets.count == 100 })
        #expect(collector.packets.map(packetNumber) == Array(0..<100))
        #expect(collector.batches.allSatisfy { (1...PacketFlowLimits.maximumBatchSize).contains($0.count) })
    }

    @Test func aLinkedPairCarriesWritesToTheOtherEnd() async {
        let (a, b) = InMemoryPacketFlow.makePair()
        defer {
            a.close()
            b.close()
        }
        let atB = PacketCollector()
        let atA = PacketCollector()
        b.startReading(on: loop, atB.deliver(expecting: loop))
        a.startReading(on: loop, atA.deliver(expecting: loop))
        a.writePackets(numberedPackets(40))
        b.writePackets(numberedPackets(3, size: 60))
        #expect(await Loopback.waitUntil(seconds: 10) { atB.packets.count == 40 && atA.packets.count == 3 })
        #expect(atB.batches.map(\.count) == [32, 8])
        #expect(atB.packets.map(packetNumber) == Array(0..<40))
        #expect(a.counters.packetsWritten == 40 && a.counters.bytesWritten == 40 * 40)
        #expect(b.counters.packetsRead == 40)
        #expect(a.written.isEmpty, "a linked end forwards instead of recording")
    }

    @Test func aSingleEndRecordsWhatItWrites() {
        let flow = InMemoryPacketFlow()
        flow.writePackets(numberedPackets(3))
        #expect(flow.written.map(packetNumber) == [0, 1, 2])
        #expect(flow.takeWritten().count == 3)
        #expect(flow.written.isEmpty)
        #expect(flow.counters.packetsWritten == 3)
    }

    @Test func aFullQueueDropsAndCountsLikeAFullDevice() {
        let (a, b) = InMemoryPacketFlow.makePair(capacity: 5)
        a.writePackets(numberedPackets(8))
        #expect(a.counters.packetsWritten == 5)
        #expect(a.counters.writeDrops == 3)
        #expect(b.inject(numberedPackets(1)) == 0)
    }

    @Test func aClosedFlowDropsWritesAndIgnoresInjection() async {
        let flow = InMemoryPacketFlow()
        let collector = PacketCollector()
        flow.startReading(on: loop, collector.deliver(expecting: loop))
        flow.close()
        flow.close()
        flow.writePackets(numberedPackets(2))
        #expect(flow.counters.writeDrops == 2)
        #expect(flow.inject(numberedPackets(2)) == 0)
        try? await Task.sleep(for: .milliseconds(50))
        #expect(collector.packets.isEmpty)
    }
}
