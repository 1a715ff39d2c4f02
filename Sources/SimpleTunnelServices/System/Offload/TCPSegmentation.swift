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
    /// More segments than any real MSS makes of 64 KiB: a bound on what one read can make us allocate.
    static let maximumSegments = 2048
    /// What the segments of one read may hold in all, their repeated headers
    /// included: IPv4 or IPv6 with 60 bytes of TCP header cut at the smallest
    /// MSS Linux sends (48) stays under it, while IPv6 extension headers tens
    /// of KiB long, repeated in every segment, cannot make one read cost
    /// megabytes.
    static let maximumSplitBytes = 256 * 1024

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
        let headers = layout.headersLength
        let count = layout.segmentCount
        let total = packet.count - headers + count * headers
        var buffer = allocator.buffer(capacity: total)
        let headerBytes = UnsafeRawBufferPointer(rebasing: packet[..<headers])
        let sequence = packet.loadBigEndianUInt32(at: layout.transportOffset + 4)
        let identification = layout.isIPv4 ? packet.loadBigEndianUInt16(at: 4) : 0
        let flags = packet[layout.transportOffset + 13]
        var ranges: [(start: Int, length: Int)] = []
        ranges.reserveCapacity(count)
        // Every segment is written and finished in place through one pointer: a
        // ByteBuffer call per header field cost more than copying the payload.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { output in
            var start = 0
            for index in 0..<count {
                let chunkStart = headers + index * layout.segmentSize
                let chunkLength = min(layout.segmentSize, packet.count - chunkStart)
                let length = headers + chunkLength
                let segment = UnsafeMutableRawBufferPointer(rebasing: output[start..<(start + length)])
                segment.copyMemory(from: headerBytes)
                UnsafeMutableRawBufferPointer(rebasing: segment[headers...])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[chunkStart..<(chunkStart + chunkLength)]))
                var segmentFlags = flags
                if index != count - 1 { segmentFlags &= ~(fin | psh) }
                if index != 0 { segmentFlags &= ~cwr }
                finishSegment(
                    segment, layout: layout, identification: identification &+ UInt16(truncatingIfNeeded: index),
                    sequence: sequence &+ UInt32(truncatingIfNeeded: index * layout.segmentSize), flags: segmentFlags)
                ranges.append((start, length))
                start += length
            }
            return start
        }
        // Sliced only now: a slice taken earlier would make every later write copy the buffer.
        return ranges.map { buffer.getSlice(at: $0.start, length: $0.length) ?? ByteBuffer() }
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
        let version = packet[0] >> 4
        let transport = Int(header.checksumStart)
        switch (version, gsoType) {
        case (4, .tcpIPv4):
            let ipHeaderLength = Int(packet[0] & 0x0F) * 4
            guard ipHeaderLength >= 20, transport == ipHeaderLength else {
                throw .inconsistent("IPv4 header of \(ipHeaderLength) bytes, checksum start \(transport)")
            }
            guard packet[9] == TCPSegmentation.tcpProtocolNumber else { throw .inconsistent("IPv4 protocol \(packet[9]) in a TCP super-packet") }
            guard Int(packet.loadBigEndianUInt16(at: 2)) == count else { throw .inconsistent("IPv4 total length differs from the \(count) bytes read") }
            guard packet.loadBigEndianUInt16(at: 6) & 0x3FFF == 0 else { throw .inconsistent("a fragment as a super-packet") }
            isIPv4 = true
        case (6, .tcpIPv6):
            guard count >= 40, transport >= 40, transport > 40 || packet[6] == TCPSegmentation.tcpProtocolNumber else {
                throw .inconsistent("IPv6 next header \(count >= 40 ? packet[6] : 0), checksum start \(transport)")
            }
            guard 40 + Int(packet.loadBigEndianUInt16(at: 4)) == count else { throw .inconsistent("IPv6 payload length differs from the \(count) bytes read") }
            isIPv4 = false
        default:
            throw .inconsistent("IP version \(version) with GSO type \(header.gsoTypeByte)")
        }
        guard header.checksumOffset == 16, transport + 20 <= count else {
            throw .inconsistent("TCP checksum offset \(header.checksumOffset) at \(transport) in \(count) bytes")
        }
        let tcpHeaderLength = Int(packet[transport + 12] >> 4) * 4
        guard tcpHeaderLength >= 20, transport + tcpHeaderLength <= count else {
            throw .inconsistent("TCP header of \(tcpHeaderLength) bytes at \(transport) in \(count) bytes")
        }
        let segmentSize = Int(header.gsoSize)
        let payload = count - transport - tcpHeaderLength
        guard segmentSize > 0 else { throw .inconsistent("GSO size 0") }
        let segments = max(1, (payload + segmentSize - 1) / segmentSize)
        guard segments <= TCPSegmentation.maximumSegments else { throw .inconsistent("\(segments) segments of \(segmentSize) bytes") }
        let headers = transport + tcpHeaderLength
        guard payload + segments * headers <= TCPSegmentation.maximumSplitBytes else {
            throw .inconsistent("\(segments) segments would repeat \(headers) bytes of headers each")
        }
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
