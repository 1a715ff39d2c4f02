import NIOCore

/// What cutting a TCP and a UDP super-packet share: the IP header checked
/// against the read, the bounds on what one read may be cut into, and the cut
/// itself, every segment written into one allocation.
enum SegmentCut {
    /// More segments than any real MSS makes of 64 KiB: a bound on what one read can make us allocate.
    static let maximumSegments = 2048
    /// What the segments of one read may hold in all, their repeated headers
    /// included: IPv4 or IPv6 with 60 bytes of TCP header cut at the smallest
    /// MSS Linux sends (48) stays under it, while IPv6 extension headers tens
    /// of KiB long, repeated in every segment, cannot make one read cost
    /// megabytes.
    static let maximumSplitBytes = 256 * 1024

    /// Whether `packet` is IPv4 (else IPv6), after checking that its IP header
    /// ends at `transport`, carries `protocolNumber` (IPv6: directly, or behind
    /// extension headers the kernel chained) and has the read's length, and
    /// that it is no fragment. `name` ("TCP", "UDP") is for the errors.
    static func isIPv4(_ packet: UnsafeRawBufferPointer, transport: Int, protocolNumber: UInt8, name: String) throws(TUNOffloadError) -> Bool {
        let count = packet.count
        switch packet[0] >> 4 {
        case 4:
            let ipHeaderLength = Int(packet[0] & 0x0F) * 4
            guard ipHeaderLength >= 20, transport == ipHeaderLength else {
                throw .inconsistent("IPv4 header of \(ipHeaderLength) bytes, checksum start \(transport)")
            }
            guard packet[9] == protocolNumber else { throw .inconsistent("IPv4 protocol \(packet[9]) in a \(name) super-packet") }
            guard Int(packet.loadBigEndianUInt16(at: 2)) == count else { throw .inconsistent("IPv4 total length differs from the \(count) bytes read") }
            guard packet.loadBigEndianUInt16(at: 6) & 0x3FFF == 0 else { throw .inconsistent("a fragment as a super-packet") }
            return true
        case 6:
            guard count >= 40, transport >= 40, transport > 40 || packet[6] == protocolNumber else {
                throw .inconsistent("IPv6 next header \(count >= 40 ? packet[6] : 0), checksum start \(transport) in a \(name) super-packet")
            }
            guard 40 + Int(packet.loadBigEndianUInt16(at: 4)) == count else { throw .inconsistent("IPv6 payload length differs from the \(count) bytes read") }
            return false
        default:
            throw .inconsistent("IP version \(packet[0] >> 4) in a \(name) super-packet")
        }
    }

    /// How many segments of `segmentSize` payload bytes a read of `length`
    /// bytes behind `headers` bytes of headers makes, held to the bounds above.
    static func count(length: Int, headers: Int, segmentSize: Int) throws(TUNOffloadError) -> Int {
        guard segmentSize > 0 else { throw .inconsistent("GSO size 0") }
        let payload = length - headers
        let segments = max(1, (payload + segmentSize - 1) / segmentSize)
        guard segments <= maximumSegments else { throw .inconsistent("\(segments) segments of \(segmentSize) bytes") }
        guard payload + segments * headers <= maximumSplitBytes else {
            throw .inconsistent("\(segments) segments would repeat \(headers) bytes of headers each")
        }
        return segments
    }

    /// `count` segments of `packet`: each its `headers` bytes copied, then its
    /// chunk of the payload, then `finish(segment, index)` sets its own fields.
    /// Every segment is written in place through one pointer (a ByteBuffer call
    /// per header field cost more than copying the payload) into one allocation.
    static func cut(
        _ packet: UnsafeRawBufferPointer, headers: Int, segmentSize: Int, count: Int, allocator: ByteBufferAllocator,
        finish: (UnsafeMutableRawBufferPointer, Int) -> Void
    ) -> [ByteBuffer] {
        let total = packet.count - headers + count * headers
        var buffer = allocator.buffer(capacity: total)
        let headerBytes = UnsafeRawBufferPointer(rebasing: packet[..<headers])
        var ranges: [(start: Int, length: Int)] = []
        ranges.reserveCapacity(count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { output in
            var start = 0
            for index in 0..<count {
                let chunkStart = headers + index * segmentSize
                let chunkLength = min(segmentSize, packet.count - chunkStart)
                let length = headers + chunkLength
                let segment = UnsafeMutableRawBufferPointer(rebasing: output[start..<(start + length)])
                segment.copyMemory(from: headerBytes)
                UnsafeMutableRawBufferPointer(rebasing: segment[headers...])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[chunkStart..<(chunkStart + chunkLength)]))
                finish(segment, index)
                ranges.append((start, length))
                start += length
            }
            return start
        }
        // Sliced only now: a slice taken earlier would make every later write copy the buffer.
        return ranges.map { buffer.getSlice(at: $0.start, length: $0.length) ?? ByteBuffer() }
    }
}
