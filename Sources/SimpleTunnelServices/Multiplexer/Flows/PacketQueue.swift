import NIOCore

/// An IP flow's packets waiting for the tunnel, in batches as the device
/// delivered them, each with the time it arrived (for `CoDel`).
struct PacketQueue {
    private var batches = CircularBuffer<(packets: [TunnelPacket], arrived: NIODeadline)>(initialCapacity: 4)
    /// Packet bytes queued.
    private(set) var bufferedBytes = 0

    var isEmpty: Bool { batches.isEmpty }
    /// When the oldest packet waiting arrived.
    var headArrival: NIODeadline? { batches.first?.arrived }

    mutating func append(_ packets: [TunnelPacket], arrived: NIODeadline) {
        guard !packets.isEmpty else { return }
        bufferedBytes += packets.reduce(0) { $0 + $1.bytes.readableBytes }
        batches.append((packets, arrived))
    }

    /// Drops the oldest batch; returns how many packets it held.
    mutating func dropFirstBatch() -> Int {
        guard let batch = batches.popFirst() else { return 0 }
        bufferedBytes -= batch.packets.reduce(0) { $0 + $1.bytes.readableBytes }
        return batch.packets.count
    }

    /// Packets from the front for one `packets` message of at most
    /// `maximumCount` packets and about `maximumBytes` (a single larger packet
    /// goes alone): the first batch whole when it fits, else cut, and what is
    /// left of it keeps its arrival.
    mutating func popMessage(maximumCount: Int, maximumBytes: Int) -> [TunnelPacket] {
        guard var first = batches.first else { return [] }
        var taken = 0
        var bytes = 0
        for packet in first.packets {
            let size = packet.bytes.readableBytes
            guard taken < maximumCount, taken == 0 || bytes + size <= maximumBytes else { break }
            taken += 1
            bytes += size
        }
        bufferedBytes -= bytes
        guard taken < first.packets.count else {
            batches.removeFirst()
            return first.packets
        }
        let message = Array(first.packets.prefix(taken))
        first.packets.removeFirst(taken)
        batches[batches.startIndex] = first
        return message
    }
}
