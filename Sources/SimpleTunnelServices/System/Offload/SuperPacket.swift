import NIOCore

/// A TCP super-packet as two Linux peers carry it whole (PROTOCOL.md B8):
/// the bytes a TUN device with TSO reads, and the segment size its
/// virtio_net_hdr named. Everything else of that header follows from the
/// packet, so the wire carries only the size, and a receiver rebuilds the
/// header from bytes it has checked rather than trusting a peer's offsets.
enum SuperPacket {
    /// The virtio_net_hdr that makes a TUN device cut `packet` into segments of
    /// `segmentSize` payload bytes. Throws when the packet is not a TCP packet
    /// over IPv4, or over IPv6 without extension headers, whose lengths agree
    /// with its bytes, or would make more segments than any MSS does. The
    /// segments' size against the way out is the kernel's to check, as for a
    /// packet larger than the device's MTU (it forwards such a packet, or
    /// answers "too big").
    static func header(for packet: UnsafeRawBufferPointer, segmentSize: UInt16) throws(TUNOffloadError) -> (VirtioNetHeader, SuperPacketLayout) {
        guard packet.count >= 40 else { throw .inconsistent("a super-packet of \(packet.count) bytes") }
        let isIPv4 = packet[0] >> 4 == 4
        // IPv6 with extension headers never comes out of a TSO read we would forward: with TCP taken to start
        // right after the fixed header, the layout check refuses any other next header.
        let transport = isIPv4 ? Int(packet[0] & 0x0F) * 4 : 40
        let header = VirtioNetHeader(
            flags: VirtioNetHeader.needsChecksum, gsoType: isIPv4 ? .tcpIPv4 : .tcpIPv6, headerLength: 0,
            gsoSize: segmentSize, checksumStart: UInt16(transport), checksumOffset: 16)
        let layout = try SuperPacketLayout(packet, header: header, gsoType: isIPv4 ? .tcpIPv4 : .tcpIPv6)
        // TSO never reads one without payload; a device would be handed a segment size for nothing.
        guard layout.headersLength < packet.count else { throw .inconsistent("a super-packet of headers without payload") }
        var complete = header
        complete.headerLength = UInt16(layout.headersLength)
        // CWR on the first segment only, as the kernel's TSO marks it.
        if packet[transport + 13] & TCPSegmentation.cwr != 0 { complete.gsoTypeByte |= VirtioNetHeader.gsoECNBit }
        return (complete, layout)
    }

    /// Whether a super-packet a peer sent may be written to a device: it holds
    /// together (`header(for:segmentSize:)`) and makes at least two segments,
    /// as every TSO read does; the kernel refuses a one-segment one.
    static func isWritable(_ packet: TunnelPacket) -> Bool {
        packet.bytes.withUnsafeReadableBytes { bytes in
            guard let (_, layout) = try? header(for: bytes, segmentSize: packet.segmentSize) else { return false }
            return layout.segmentCount >= 2
        }
    }

    /// The ordinary packets a super-packet stands for, with every checksum
    /// computed: for a peer or a device that takes no super-packets.
    static func segments(of packet: TunnelPacket, allocator: ByteBufferAllocator) throws(TUNOffloadError) -> [ByteBuffer] {
        try packet.bytes.withUnsafeReadableBytes { bytes throws(TUNOffloadError) in
            let (header, _) = try Self.header(for: bytes, segmentSize: packet.segmentSize)
            var output: [ByteBuffer] = []
            try TCPSegmentation.split(bytes, header: header, allocator: allocator, into: &output)
            return output
        }
    }

    /// `packets` with every super-packet cut into ordinary packets; one that
    /// does not hold together is dropped and counted in `malformed`.
    static func flatten(_ packets: [TunnelPacket], allocator: ByteBufferAllocator, malformed: inout Int) -> [TunnelPacket] {
        cut(packets, longerThan: .min, allocator: allocator, malformed: &malformed)
    }

    /// `packets` with every super-packet of more than `largest` bytes cut
    /// into ordinary packets, and the smaller ones left whole; one that does
    /// not hold together is dropped and counted in `malformed`.
    static func cut(_ packets: [TunnelPacket], longerThan largest: Int, allocator: ByteBufferAllocator, malformed: inout Int) -> [TunnelPacket] {
        func isCut(_ packet: TunnelPacket) -> Bool { packet.isSuperPacket && packet.bytes.readableBytes > largest }
        guard packets.contains(where: isCut) else { return packets }
        var output: [TunnelPacket] = []
        output.reserveCapacity(packets.count * 4)
        for packet in packets {
            guard isCut(packet) else {
                output.append(packet)
                continue
            }
            do {
                for segment in try segments(of: packet, allocator: allocator) {
                    output.append(TunnelPacket(bytes: segment, protocolNumber: packet.protocolNumber))
                }
            } catch {
                malformed += 1
            }
        }
        return output
    }
}
