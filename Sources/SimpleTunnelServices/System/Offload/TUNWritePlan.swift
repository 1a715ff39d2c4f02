import NIOCore

/// What one batch of packets becomes on a TUN device: with a virtio_net_hdr,
/// a super-packet goes whole with the header rebuilt from its bytes, and runs
/// of ordinary TCP segments are coalesced; without one, a super-packet is cut
/// into ordinary packets here. Order is kept.
struct TUNWritePlan {
    var writes: [TUNOutgoingPacket] = []
    /// Super-packets dropped: they did not hold together.
    var malformed = 0

    init(_ packets: [TunnelPacket], virtioHeader: Bool, allocator: ByteBufferAllocator) {
        writes.reserveCapacity(packets.count)
        guard virtioHeader else {
            for packet in SuperPacket.flatten(packets, allocator: allocator, malformed: &malformed) {
                writes.append(TUNOutgoingPacket(header: .plain, packet: packet.bytes, segments: 1))
            }
            return
        }
        var run: [ByteBuffer] = []
        for packet in packets {
            guard packet.isSuperPacket else {
                run.append(packet.bytes)
                continue
            }
            if !run.isEmpty {
                writes.append(contentsOf: TCPCoalescing.coalesce(run, allocator: allocator))
                run.removeAll(keepingCapacity: true)
            }
            let checked = packet.bytes.withUnsafeReadableBytes { bytes in
                try? SuperPacket.header(for: bytes, segmentSize: packet.segmentSize)
            }
            // One segment: the kernel would refuse the write; dropped and counted here instead.
            guard let (header, layout) = checked, layout.segmentCount >= 2 else {
                malformed += 1
                continue
            }
            writes.append(TUNOutgoingPacket(header: header, packet: packet.bytes, segments: layout.segmentCount))
        }
        if !run.isEmpty { writes.append(contentsOf: TCPCoalescing.coalesce(run, allocator: allocator)) }
    }
}
