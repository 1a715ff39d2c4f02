import NIOCore

/// The UDP half of the read offloads (USO, `TUN_F_USO4/6`): a UDP GSO
/// super-packet, which the kernel hands over when an application sends with
/// `UDP_SEGMENT` (QUIC stacks do), is cut into its `gsoSize`-byte datagrams,
/// each with its own IP length (and IPv4 identification and header checksum),
/// UDP length and full UDP checksum. UDP super-packets never cross to a peer
/// whole: PROTOCOL.md B8 carries TCP's only.
enum UDPSegmentation {
    static let udpProtocolNumber: UInt8 = 17
    static let udpHeaderLength = 8

    /// The datagrams `packet` stands for, sharing one allocation. Throws when
    /// the header and the packet disagree, or the cut would exceed `SegmentCut`'s bounds.
    static func segments(
        of packet: UnsafeRawBufferPointer, header: VirtioNetHeader, allocator: ByteBufferAllocator
    ) throws(TUNOffloadError) -> [ByteBuffer] {
        let layout = try Layout(packet, header: header)
        let identification = layout.isIPv4 ? packet.loadBigEndianUInt16(at: 4) : 0
        return SegmentCut.cut(
            packet, headers: layout.transportOffset + udpHeaderLength, segmentSize: layout.segmentSize, count: layout.segmentCount,
            allocator: allocator
        ) { datagram, index in
            layout.finish(datagram, identification: identification &+ UInt16(truncatingIfNeeded: index))
        }
    }

    /// Where a UDP super-packet's headers end, checked against its bytes.
    struct Layout {
        let isIPv4: Bool
        let transportOffset: Int
        let segmentSize: Int
        let segmentCount: Int

        init(_ packet: UnsafeRawBufferPointer, header: VirtioNetHeader) throws(TUNOffloadError) {
            let count = packet.count
            guard count >= 28 else { throw .inconsistent("a UDP super-packet of \(count) bytes") }
            let transport = Int(header.checksumStart)
            isIPv4 = try SegmentCut.isIPv4(packet, transport: transport, protocolNumber: udpProtocolNumber, name: "UDP")
            guard header.checksumOffset == 6, transport + udpHeaderLength <= count else {
                throw .inconsistent("UDP checksum offset \(header.checksumOffset) at \(transport) in \(count) bytes")
            }
            segmentSize = Int(header.gsoSize)
            segmentCount = try SegmentCut.count(length: count, headers: transport + udpHeaderLength, segmentSize: segmentSize)
            transportOffset = transport
        }

        /// Sets one datagram's lengths and identification, then its checksums.
        func finish(_ datagram: UnsafeMutableRawBufferPointer, identification: UInt16) {
            let length = datagram.count
            let udp = transportOffset
            if isIPv4 {
                datagram.storeBigEndian(UInt16(length), at: 2)
                datagram.storeBigEndian(identification, at: 4)
                datagram.storeBigEndian(UInt16(0), at: 10)
                datagram.storeBigEndian(InternetChecksum.finish(InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: datagram[..<udp]))), at: 10)
            } else {
                datagram.storeBigEndian(UInt16(length - 40), at: 4)
            }
            datagram.storeBigEndian(UInt16(length - udp), at: udp + 4)
            datagram.storeBigEndian(UInt16(0), at: udp + 6)
            let addresses = UnsafeRawBufferPointer(rebasing: isIPv4 ? datagram[12..<20] : datagram[8..<40])
            let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: udpProtocolNumber, transportLength: length - udp)
            var checksum = InternetChecksum.finish(InternetChecksum.add(pseudo, InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: datagram[udp...]))))
            // Zero on the wire means "no checksum": a computed zero is sent as all ones.
            if checksum == 0 { checksum = 0xFFFF }
            datagram.storeBigEndian(checksum, at: udp + 6)
        }
    }
}
