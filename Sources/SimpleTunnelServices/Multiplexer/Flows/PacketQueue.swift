import NIOCore

/// An IP flow's packets waiting for the tunnel, each with the time it
/// arrived (for `CoDel`), in two lanes: a connection with nothing queued
/// goes ahead of those that have, as fq_codel's new flows go ahead of its
/// old ones. So an echo, a DNS answer or an ACK waits for the tunnel, not
/// behind the milliseconds a download keeps queued here. A connection's
/// packets never pass each other: one joins the sparse lane only while no
/// packet of its bucket waits in either lane, so the sparse lane holds at
/// most one packet per bucket.
struct PacketQueue {
    private struct Entry {
        var packet: TunnelPacket
        var bucket: UInt8
        var arrived: NIODeadline
    }

    /// Connections share a bucket by their hash: a collision only puts a
    /// sparse one in the bulk lane, as in fq_codel.
    static let bucketCount = 64

    private var sparse = CircularBuffer<Entry>(initialCapacity: 4)
    private var bulk = CircularBuffer<Entry>(initialCapacity: 16)
    /// Packets queued per bucket, in either lane; allocated with the first packet.
    private var queuedPerBucket: [UInt32] = []
    /// Packet bytes queued.
    private(set) var bufferedBytes = 0

    var isEmpty: Bool { sparse.isEmpty && bulk.isEmpty }
    /// When the oldest packet of the bulk lane arrived: the one `CoDel` judges.
    var bulkHeadArrival: NIODeadline? { bulk.first?.arrived }
    /// Packets waiting in the sparse lane (at most one per bucket).
    var sparseCount: Int { sparse.count }

    mutating func append(_ packets: [TunnelPacket], arrived: NIODeadline) {
        guard !packets.isEmpty else { return }
        if queuedPerBucket.isEmpty {
            queuedPerBucket = Array(repeating: 0, count: Self.bucketCount)
        }
        for packet in packets {
            let bucket = PacketFlowHash.bucket(of: packet.bytes, count: Self.bucketCount)
            let entry = Entry(packet: packet, bucket: UInt8(truncatingIfNeeded: bucket), arrived: arrived)
            if queuedPerBucket[bucket] == 0 {
                sparse.append(entry)
            } else {
                bulk.append(entry)
            }
            queuedPerBucket[bucket] &+= 1
            bufferedBytes += packet.bytes.readableBytes
        }
    }

    /// Drops the bulk lane's oldest packet (`CoDel`'s choice); returns how many it dropped.
    mutating func dropBulkHead() -> Int {
        guard let entry = bulk.popFirst() else { return 0 }
        forget(entry)
        return 1
    }

    /// Packets from the front for one `packets` message of at most
    /// `maximumCount` packets and about `maximumBytes` (a single larger packet
    /// goes alone): the sparse lane's first, then the bulk lane's.
    mutating func popMessage(maximumCount: Int, maximumBytes: Int) -> [TunnelPacket] {
        var message: [TunnelPacket] = []
        message.reserveCapacity(min(maximumCount, sparse.count + bulk.count))
        var bytes = 0
        while message.count < maximumCount {
            let fromSparse = !sparse.isEmpty
            guard let head = fromSparse ? sparse.first : bulk.first else { break }
            let size = head.packet.bytes.readableBytes
            guard message.isEmpty || bytes + size <= maximumBytes else { break }
            _ = fromSparse ? sparse.removeFirst() : bulk.removeFirst()
            forget(head)
            bytes += size
            message.append(head.packet)
        }
        return message
    }

    private mutating func forget(_ entry: Entry) {
        queuedPerBucket[Int(entry.bucket)] &-= 1
        bufferedBytes -= entry.packet.bytes.readableBytes
    }
}
