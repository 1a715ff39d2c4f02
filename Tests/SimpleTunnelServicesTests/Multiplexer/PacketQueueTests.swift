import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices

@Suite("An IP flow's packet queue")
struct PacketQueueTests {
    /// An IPv4 TCP packet of `size` bytes (at least 28, so the tag is past the ports) from 10.0.0.2:`port` to 10.0.0.1:80;
    /// `tag` in its last byte tells packets apart.
    static func tcp(port: UInt16, size: Int = 100, tag: UInt8 = 0) -> TunnelPacket {
        var bytes = ByteBuffer(repeating: 0, count: size)
        bytes.setBytes([0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1], at: 0)
        bytes.setInteger(port, at: 20)
        bytes.setInteger(UInt16(80), at: 22)
        bytes.setInteger(tag, at: size - 1)
        return TunnelPacket(bytes: bytes)
    }

    static func bucket(_ packet: TunnelPacket) -> Int {
        PacketFlowHash.bucket(of: packet.bytes, count: PacketQueue.bucketCount)
    }

    /// Two source ports whose connections land in different buckets.
    static let (bulkPort, sparsePort): (UInt16, UInt16) = {
        let first: UInt16 = 40000
        let other = (40001...41000).first { bucket(tcp(port: $0)) != bucket(tcp(port: first)) } ?? 0
        return (first, UInt16(other))
    }()

    static func tags(_ packets: [TunnelPacket]) -> [UInt8] {
        packets.map { $0.bytes.getInteger(at: $0.bytes.writerIndex - 1, as: UInt8.self) ?? 255 }
    }

    @Test func anEchoGoesAheadOfADownloadsQueueAndTheDownloadKeepsItsOrder() {
        var queue = PacketQueue()
        let now = NIODeadline.uptimeNanoseconds(10)
        queue.append((1...10).map { Self.tcp(port: Self.bulkPort, tag: $0) }, arrived: now)
        queue.append([Self.tcp(port: Self.sparsePort, tag: 100)], arrived: now + .milliseconds(5))
        #expect(queue.bufferedBytes == 1100)
        // The download's first packet found its bucket empty, so it is ahead too; the echo comes next.
        let first = queue.popMessage(maximumCount: 2, maximumBytes: 10_000)
        #expect(Self.tags(first) == [1, 100])
        let rest = queue.popMessage(maximumCount: 64, maximumBytes: 10_000)
        #expect(Self.tags(rest) == Array(2...10))
        #expect(queue.isEmpty && queue.bufferedBytes == 0 && queue.bulkHeadArrival == nil)
    }

    @Test func aMessageIsCutByCountAndByBytesAndALargerPacketGoesAlone() {
        var queue = PacketQueue()
        queue.append([Self.tcp(port: Self.bulkPort, size: 60_000, tag: 1)] + (2...5).map { Self.tcp(port: Self.bulkPort, tag: $0) }, arrived: .uptimeNanoseconds(1))
        #expect(Self.tags(queue.popMessage(maximumCount: 64, maximumBytes: 1000)) == [1], "a larger packet goes alone")
        #expect(Self.tags(queue.popMessage(maximumCount: 2, maximumBytes: 1000)) == [2, 3], "cut by count")
        #expect(Self.tags(queue.popMessage(maximumCount: 64, maximumBytes: 150)) == [4], "cut by bytes")
        #expect(Self.tags(queue.popMessage(maximumCount: 64, maximumBytes: 150)) == [5])
        #expect(queue.popMessage(maximumCount: 64, maximumBytes: 150).isEmpty)
    }

    @Test func coDelDropsTheBulkLanesOldestPacketAndNeverTheSparseOne() {
        var queue = PacketQueue()
        let early = NIODeadline.uptimeNanoseconds(10), late = NIODeadline.uptimeNanoseconds(20)
        queue.append([Self.tcp(port: Self.bulkPort, tag: 1), Self.tcp(port: Self.bulkPort, tag: 2)], arrived: early)
        queue.append([Self.tcp(port: Self.bulkPort, tag: 3)], arrived: late)
        queue.append([Self.tcp(port: Self.sparsePort, tag: 9)], arrived: late)
        #expect(queue.sparseCount == 2)
        #expect(queue.bulkHeadArrival == early, "the bulk lane's head is the download's second packet")
        #expect(queue.dropBulkHead() == 1)
        #expect(queue.bufferedBytes == 300)
        #expect(queue.bulkHeadArrival == late)
        #expect(queue.dropBulkHead() == 1)
        #expect(queue.dropBulkHead() == 0, "the sparse lane is never CoDel's to drop")
        #expect(Self.tags(queue.popMessage(maximumCount: 64, maximumBytes: 10_000)) == [1, 9])
        #expect(queue.isEmpty && queue.bufferedBytes == 0)
    }

    @Test func anEmptyBatchQueuesNothing() {
        var queue = PacketQueue()
        queue.append([], arrived: .uptimeNanoseconds(1))
        #expect(queue.isEmpty && queue.bulkHeadArrival == nil)
    }

    /// Random mixes of connections, messages and drops: no connection's packets
    /// pass each other, nothing is lost but what was dropped, the byte count
    /// stays true, and the sparse lane never holds two packets of one bucket.
    @Test func noConnectionsPacketsPassEachOtherAndNothingIsLost() async {
        await propertyCheck(count: 500, input: Gen<Int>.int(in: 0...40).array(of: 1...200)) { steps in
            var queue = PacketQueue()
            var nextTag = [UInt16: UInt8]()
            var sent = [UInt16: [UInt8]]()
            var delivered = [UInt16: [UInt8]]()
            var dropped = 0, appended = 0, bytes = 0
            var faults: [String] = []
            for (index, step) in steps.enumerated() {
                switch step {
                case 0...29:
                    let port = UInt16(50000 + step % 12)
                    let tag = nextTag[port, default: 0]
                    nextTag[port] = tag &+ 1
                    let packet = Self.tcp(port: port, size: 28 + step, tag: tag)
                    queue.append([packet], arrived: .uptimeNanoseconds(UInt64(index)))
                    sent[port, default: []].append(tag)
                    appended += 1
                    bytes += packet.bytes.readableBytes
                case 30...37:
                    for packet in queue.popMessage(maximumCount: step - 29, maximumBytes: 100 * step) {
                        let port = packet.bytes.getInteger(at: 20, as: UInt16.self) ?? 0
                        delivered[port, default: []].append(Self.tags([packet])[0])
                        bytes -= packet.bytes.readableBytes
                    }
                default:
                    let before = queue.bufferedBytes
                    let count = queue.dropBulkHead()
                    dropped += count
                    if count == 1, before - queue.bufferedBytes < 28 { faults.append("a drop freed \(before - queue.bufferedBytes) bytes") }
                    bytes -= before - queue.bufferedBytes
                }
                if queue.sparseCount > PacketQueue.bucketCount { faults.append("sparse lane of \(queue.sparseCount)") }
            }
            while !queue.isEmpty {
                for packet in queue.popMessage(maximumCount: 64, maximumBytes: 100_000) {
                    let port = packet.bytes.getInteger(at: 20, as: UInt16.self) ?? 0
                    delivered[port, default: []].append(Self.tags([packet])[0])
                    bytes -= packet.bytes.readableBytes
                }
            }
            let total = delivered.values.reduce(0) { $0 + $1.count }
            #expect(total + dropped == appended)
            #expect(bytes == 0 && queue.bufferedBytes == 0)
            #expect(faults.isEmpty)
            for (port, tags) in delivered {
                // What arrived is what was sent, in order, less the drops.
                var remaining = sent[port, default: []][...]
                for tag in tags {
                    guard let found = remaining.firstIndex(of: tag) else {
                        Issue.record("connection \(port): \(tags) out of order against \(sent[port, default: []])")
                        break
                    }
                    remaining = remaining[(found + 1)...]
                }
            }
        }
    }
}
