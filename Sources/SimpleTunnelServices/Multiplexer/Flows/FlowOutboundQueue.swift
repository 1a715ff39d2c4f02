import NIOCore

/// What one flow has waiting to go into the tunnel, in order: data read from
/// its local socket and, last, the close that follows it.
struct FlowOutboundQueue {
    enum Item {
        case data(ByteBuffer, source: TunnelEndpoint?)
        case close(TunnelConnectionCloseDirection)
    }

    private var items = CircularBuffer<Item>(initialCapacity: 2)
    /// Data bytes queued, for the flow's read watermarks.
    private(set) var bufferedBytes = 0

    var isEmpty: Bool { items.isEmpty }

    mutating func appendData(_ data: ByteBuffer, source: TunnelEndpoint?) {
        bufferedBytes += data.readableBytes
        items.append(.data(data, source: source))
    }

    mutating func appendClose(_ direction: TunnelConnectionCloseDirection) {
        items.append(.close(direction))
    }

    /// The next item; stream data longer than `maximumChunk` is split so that
    /// no message exceeds a frame and no flow hogs the tunnel for long.
    mutating func popFirst(maximumChunk: Int, splittable: Bool) -> Item? {
        guard let first = items.first else { return nil }
        switch first {
        case .data(var data, let source) where splittable && data.readableBytes > maximumChunk:
            // Cannot fail: the buffer holds more than `maximumChunk` bytes.
            let chunk = data.readSlice(length: maximumChunk)!
            items[items.startIndex] = .data(data, source: source)
            bufferedBytes -= chunk.readableBytes
            return .data(chunk, source: source)
        case .data(let data, _):
            bufferedBytes -= data.readableBytes
            return items.removeFirst()
        case .close:
            return items.removeFirst()
        }
    }

    /// Drops queued data (the peer can no longer take it); a queued close stays.
    mutating func removeAllData() {
        items.removeAll { item in
            if case .close = item { return false }
            return true
        }
        bufferedBytes = 0
    }
}
