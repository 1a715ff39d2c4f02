import NIOCore

/// Turns what a TUN device with offloads hands us into the MTU-sized packets
/// the peer expects: a TSO/GSO TCP super-packet is cut into `gsoSize`
/// segments, each with its own IP length (and IPv4 identification and header
/// checksum), sequence number, flags and full TCP checksum; a packet whose
/// checksum the kernel left to us gets it completed.
enum TCPSegmentation {
    static let tcpProtocolNumber: UInt8 = 6
    static let fin: UInt8 = 0x01
    static let psh: UInt8 = 0x08
    static let cwr: UInt8 = 0x80

    /// Appends the packets `packet` stands for to `output`. All segments of one
    /// super-packet share one allocation. Throws, appending nothing, when the
    /// header and the packet disagree.
    static func split(
        _ packet: UnsafeRawBufferPointer, header: VirtioNetHeader, allocator: ByteBufferAllocator, into output: inout [ByteBuffer]
    ) throws(TUNOffloadError) {
        guard let gsoType = header.gsoType else { throw .unsupportedGSOType(header.gsoTypeByte) }
        switch gsoType {
        case .none:
            var buffer = allocator.buffer(capacity: packet.count)
            buffer.writeBytes(packet)
            if header.flags & VirtioNetHeader.needsChecksum != 0 {
                try completeChecksum(of: &buffer, header: header)
            }
            output.append(buffer)
        case .tcpIPv4, .tcpIPv6:
            let layout = try SuperPacketLayout(packet, header: header, gsoType: gsoType)
            output.append(contentsOf: segments(of: packet, layout: layout, allocator: allocator))
        case .udpL4:
            output.append(contentsOf: try UDPSegmentation.segments(of: packet, header: header, allocator: allocator))
        case .udp:
            // UFO (IP fragments of one datagram) is never enabled.
            throw .unsupportedGSOType(header.gsoTypeByte)
        }
    }

    /// Adds the sum of everything from `checksumStart` on to the pseudo-header
    /// sum the kernel left at `checksumStart + checksumOffset`.
    static func completeChecksum(of buffer: inout ByteBuffer, header: VirtioNetHeader) throws(TUNOffloadError) {
        let start = Int(header.checksumStart)
        let field = start + Int(header.checksumOffset)
        let length = buffer.readableBytes
        guard start < length, field + 2 <= length else {
            throw .inconsistent("checksum at \(start)+\(header.checksumOffset) lies outside a packet of \(length) bytes")
        }
        let sum = buffer.withUnsafeReadableBytes { InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        var checksum = InternetChecksum.finish(sum)
        // UDP (its checksum at offset 6) sends zero as "no checksum"; a computed zero is written as all ones.
        if checksum == 0 && header.checksumOffset == 6 { checksum = 0xFFFF }
        buffer.setInteger(checksum, at: field)
    }

    private static func segments(of packet: UnsafeRawBufferPointer, layout: SuperPacketLayout, allocator: ByteBufferAllocator) -> [ByteBuffer] {
        let count = layout.segmentCount
        let sequence = packet.loadBigEndianUInt32(at: layout.transportOffset + 4)
        let identification = layout.isIPv4 ? packet.loadBigEndianUInt16(at: 4) : 0
        let flags = packet[layout.transportOffset + 13]
        return SegmentCut.cut(
            packet, headers: layout.headersLength, segmentSize: layout.segmentSize, count: count, allocator: allocator
        ) { segment, index in
            var segmentFlags = flags
            if index != count - 1 { segmentFlags &= ~(fin | psh) }
            if index != 0 { segmentFlags &= ~cwr }
            finishSegment(
                segment, layout: layout, identification: identification &+ UInt16(truncatingIfNeeded: index),
                sequence: sequence &+ UInt32(truncatingIfNeeded: index * layout.segmentSize), flags: segmentFlags)
        }
    }

    /// Sets one segment's lengths, identification, sequence number and flags, then its checksums.
    static func finishSegment(
        _ segment: UnsafeMutableRawBufferPointer, layout: SuperPacketLayout, identification: UInt16, sequence: UInt32, flags: UInt8
    ) {
        let length = segment.count
        let tcp = layout.transportOffset
        if layout.isIPv4 {
            segment.storeBigEndian(UInt16(length), at: 2)
            segment.storeBigEndian(identification, at: 4)
            segment.storeBigEndian(UInt16(0), at: 10)
        } else {
            segment.storeBigEndian(UInt16(length - 40), at: 4)
        }
        segment.storeBigEndian(sequence, at: tcp + 4)
        segment[tcp + 13] = flags
        segment.storeBigEndian(UInt16(0), at: tcp + 16)
        let (ipChecksum, tcpChecksum) = layout.checksums(of: UnsafeRawBufferPointer(segment), transportLength: length - tcp)
        if layout.isIPv4 { segment.storeBigEndian(ipChecksum, at: 10) }
        segment.storeBigEndian(tcpChecksum, at: tcp + 16)
    }
}

/// Where the headers of a TCP super-packet end, checked against the packet.
struct SuperPacketLayout {
    let isIPv4: Bool
    /// The IP header (with IPv6 extension headers) ends and TCP begins here.
    let transportOffset: Int
    /// IP and TCP headers together.
    let headersLength: Int
    let segmentSize: Int
    let segmentCount: Int

    init(_ packet: UnsafeRawBufferPointer, header: VirtioNetHeader, gsoType: VirtioNetHeader.GSOType) throws(TUNOffloadError) {
        let count = packet.count
        guard count >= 20 else { throw .inconsistent("a super-packet of \(count) bytes") }
        let transport = Int(header.checksumStart)
        isIPv4 = try SegmentCut.isIPv4(packet, transport: transport, protocolNumber: TCPSegmentation.tcpProtocolNumber, name: "TCP")
        // The GSO type says the family too, and must agree.
        guard isIPv4 == (gsoType == .tcpIPv4) else {
            throw .inconsistent("IP version \(packet[0] >> 4) with GSO type \(header.gsoTypeByte)")
        }
        guard header.checksumOffset == 16, transport + 20 <= count else {
            throw .inconsistent("TCP checksum offset \(header.checksumOffset) at \(transport) in \(count) bytes")
        }
        let tcpHeaderLength = Int(packet[transport + 12] >> 4) * 4
        guard tcpHeaderLength >= 20, transport + tcpHeaderLength <= count else {
            throw .inconsistent("TCP header of \(tcpHeaderLength) bytes at \(transport) in \(count) bytes")
        }
        let segmentSize = Int(header.gsoSize)
        let headers = transport + tcpHeaderLength
        let segments = try SegmentCut.count(length: count, headers: headers, segmentSize: segmentSize)
        transportOffset = transport
        headersLength = headers
        self.segmentSize = segmentSize
        segmentCount = segments
    }

    /// The IPv4 header checksum (0 for IPv6) and the TCP checksum of a segment whose checksum fields are zero.
    func checksums(of segment: UnsafeRawBufferPointer, transportLength: Int) -> (UInt16, UInt16) {
        let ip = isIPv4 ? InternetChecksum.finish(InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: segment[..<transportOffset]))) : 0
        let addresses = isIPv4 ? UnsafeRawBufferPointer(rebasing: segment[12..<20]) : UnsafeRawBufferPointer(rebasing: segment[8..<40])
        let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: TCPSegmentation.tcpProtocolNumber, transportLength: transportLength)
        let tcp = InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: segment[transportOffset...]))
        return (ip, InternetChecksum.finish(InternetChecksum.add(pseudo, tcp)))
    }
}

extension UnsafeRawBufferPointer {
    func loadBigEndianUInt16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    func loadBigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}

extension UnsafeMutableRawBufferPointer {
    func storeBigEndian<Value: FixedWidthInteger>(_ value: Value, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: Value.self)
    }
}
