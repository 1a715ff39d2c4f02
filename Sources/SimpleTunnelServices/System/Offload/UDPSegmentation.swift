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
    /// the header and the packet disagree, or the cut would exceed the bounds
    /// a TCP super-packet has (`TCPSegmentation.maximumSegments`, `.maximumSplitBytes`).
    static func segments(
        of packet: UnsafeRawBufferPointer, header: VirtioNetHeader, allocator: ByteBufferAllocator
    ) throws(TUNOffloadError) -> [ByteBuffer] {
        let layout = try Layout(packet, header: header)
        let headers = layout.transportOffset + udpHeaderLength
        var buffer = allocator.buffer(capacity: layout.totalBytes)
        var ranges: [(start: Int, length: Int)] = []
        ranges.reserveCapacity(layout.segmentCount)
        let identification = layout.isIPv4 ? packet.loadBigEndianUInt16(at: 4) : 0
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: layout.totalBytes) { output in
            var start = 0
            for index in 0..<layout.segmentCount {
                let chunkStart = headers + index * layout.segmentSize
                let chunkLength = min(layout.segmentSize, packet.count - chunkStart)
                let length = headers + chunkLength
                let datagram = UnsafeMutableRawBufferPointer(rebasing: output[start..<(start + length)])
                datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[..<headers]))
                UnsafeMutableRawBufferPointer(rebasing: datagram[headers...])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[chunkStart..<(chunkStart + chunkLength)]))
                layout.finish(datagram, identification: identification &+ UInt16(truncatingIfNeeded: index))
                ranges.append((start, length))
                start += length
            }
            return start
        }
        return ranges.map { buffer.getSlice(at: $0.start, length: $0.length) ?? ByteBuffer() }
    }

    /// Where a UDP super-packet's headers end, checked against its bytes.
    struct Layout {
        let isIPv4: Bool
        let transportOffset: Int
        let segmentSize: Int
        let segmentCount: Int
        /// The datagrams' bytes together, their repeated headers included.
        let totalBytes: Int

        init(_ packet: UnsafeRawBufferPointer, header: VirtioNetHeader) throws(TUNOffloadError) {
            let count = packet.count
            guard count >= 28 else { throw .inconsistent("a UDP super-packet of \(count) bytes") }
            let transport = Int(header.checksumStart)
            switch packet[0] >> 4 {
            case 4:
                let ipHeaderLength = Int(packet[0] & 0x0F) * 4
                guard ipHeaderLength >= 20, transport == ipHeaderLength, packet[9] == udpProtocolNumber else {
                    throw .inconsistent("IPv4 header of \(ipHeaderLength) bytes, protocol \(packet[9]), checksum start \(transport) in a UDP super-packet")
                }
                guard Int(packet.loadBigEndianUInt16(at: 2)) == count else { throw .inconsistent("IPv4 total length differs from the \(count) bytes read") }
                guard packet.loadBigEndianUInt16(at: 6) & 0x3FFF == 0 else { throw .inconsistent("a fragment as a super-packet") }
                isIPv4 = true
            case 6:
                // As for TCP: past the fixed header only behind extension headers the kernel chained.
                guard count >= 48, transport >= 40, transport > 40 || packet[6] == udpProtocolNumber else {
                    throw .inconsistent("IPv6 next header \(count >= 40 ? packet[6] : 0), checksum start \(transport) in a UDP super-packet")
                }
                guard 40 + Int(packet.loadBigEndianUInt16(at: 4)) == count else { throw .inconsistent("IPv6 payload length differs from the \(count) bytes read") }
                isIPv4 = false
            default:
                throw .inconsistent("IP version \(packet[0] >> 4) in a UDP super-packet")
            }
            guard header.checksumOffset == 6, transport + udpHeaderLength <= count else {
                throw .inconsistent("UDP checksum offset \(header.checksumOffset) at \(transport) in \(count) bytes")
            }
            let segmentSize = Int(header.gsoSize)
            guard segmentSize > 0 else { throw .inconsistent("GSO size 0") }
            let headers = transport + udpHeaderLength
            let payload = count - headers
            let segments = max(1, (payload + segmentSize - 1) / segmentSize)
            let total = payload + segments * headers
            guard segments <= TCPSegmentation.maximumSegments, total <= TCPSegmentation.maximumSplitBytes else {
                throw .inconsistent("\(segments) datagrams of \(segmentSize) bytes behind \(headers) bytes of headers each")
            }
            transportOffset = transport
            self.segmentSize = segmentSize
            segmentCount = segments
            totalBytes = total
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
