import NIOCore

/// One write to a TUN device with offloads: its virtio_net_hdr and the packet,
/// which is either one of the packets given (header `.plain`) or a super-packet
/// made of `segments` of them.
struct TUNOutgoingPacket {
    var header: VirtioNetHeader
    var packet: ByteBuffer
    var segments: Int
}

/// The write side of the offloads (GRO in user space): runs of TCP segments
/// of one flow that follow each other in a batch, in sequence, with the same
/// headers, become one super-packet the kernel takes in one write and one pass
/// through its stack. Everything else goes out as it came.
enum TCPCoalescing {
    /// An IPv4 total length cannot say more; for IPv6 it keeps the kernel's default GSO limit.
    static let maximumLength = 65_535

    static func coalesce(_ packets: [ByteBuffer], allocator: ByteBufferAllocator) -> [TUNOutgoingPacket] {
        var output: [TUNOutgoingPacket] = []
        output.reserveCapacity(packets.count)
        var run: Run?
        for (index, packet) in packets.enumerated() {
            let segment = CoalescableSegment(packet)
            if let segment, var current = run, current.accepts(segment, packet, first: packets[current.firstIndex]) {
                current.append(segment, index: index)
                run = current
                continue
            }
            if let current = run { output.append(current.finish(packets, allocator: allocator)) }
            run = segment.map { Run(first: $0, index: index) }
            if run == nil { output.append(TUNOutgoingPacket(header: .plain, packet: packet, segments: 1)) }
        }
        if let current = run { output.append(current.finish(packets, allocator: allocator)) }
        return output
    }

    /// Consecutive packets of the batch that will make one super-packet.
    private struct Run {
        let first: CoalescableSegment
        let firstIndex: Int
        var lastIndex: Int
        var nextSequence: UInt32
        var nextIdentification: UInt16
        var length: Int
        var lastPayload: Int
        var pushed: Bool

        init(first: CoalescableSegment, index: Int) {
            self.first = first
            firstIndex = index
            lastIndex = index
            nextSequence = first.sequence &+ UInt32(first.payloadLength)
            nextIdentification = first.identification &+ 1
            length = first.length
            lastPayload = first.payloadLength
            pushed = first.flags & TCPSegmentation.psh != 0
        }

        /// Whether `segment` continues this run: the same flow and headers, the next
        /// sequence number (and IPv4 identification), no longer than the first,
        /// after full-sized segments only, and nothing after a PSH.
        func accepts(_ segment: CoalescableSegment, _ packet: ByteBuffer, first firstPacket: ByteBuffer) -> Bool {
            guard !pushed, lastPayload == first.payloadLength, segment.payloadLength <= first.payloadLength,
                segment.sequence == nextSequence, segment.isIPv4 == first.isIPv4, segment.headersLength == first.headersLength,
                !segment.isIPv4 || segment.identification == nextIdentification,
                length + segment.payloadLength <= TCPCoalescing.maximumLength
            else { return false }
            return firstPacket.withUnsafeReadableBytes { a in
                packet.withUnsafeReadableBytes { b in first.sameFlowAndHeaders(a, b) }
            }
        }

        mutating func append(_ segment: CoalescableSegment, index: Int) {
            lastIndex = index
            nextSequence = segment.sequence &+ UInt32(segment.payloadLength)
            nextIdentification &+= 1
            length += segment.payloadLength
            lastPayload = segment.payloadLength
            pushed = segment.flags & TCPSegmentation.psh != 0
        }

        func finish(_ packets: [ByteBuffer], allocator: ByteBufferAllocator) -> TUNOutgoingPacket {
            guard lastIndex > firstIndex else {
                return TUNOutgoingPacket(header: .plain, packet: packets[firstIndex], segments: 1)
            }
            let headers = first.headersLength
            var buffer = allocator.buffer(capacity: length)
            buffer.writeImmutableBuffer(packets[firstIndex])
            for index in (firstIndex + 1)...lastIndex {
                buffer.writeImmutableBuffer(packets[index].getSlice(at: packets[index].readerIndex + headers, length: packets[index].readableBytes - headers) ?? ByteBuffer())
            }
            let transport = first.transportOffset
            if first.isIPv4 {
                buffer.setInteger(UInt16(length), at: 2)
                buffer.setInteger(UInt16(0), at: 10)
                let checksum = buffer.withUnsafeReadableBytes { InternetChecksum.finish(InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: $0[..<transport]))) }
                buffer.setInteger(checksum, at: 10)
            } else {
                buffer.setInteger(UInt16(length - 40), at: 4)
            }
            if pushed { buffer.setInteger(first.flags | TCPSegmentation.psh, at: transport + 13) }
            // The kernel completes the checksum of every segment it makes: it wants only the pseudo-header's sum here.
            let pseudo = buffer.withUnsafeReadableBytes { bytes in
                InternetChecksum.pseudoHeaderSum(
                    addresses: UnsafeRawBufferPointer(rebasing: first.isIPv4 ? bytes[12..<20] : bytes[8..<40]),
                    protocolNumber: TCPSegmentation.tcpProtocolNumber, transportLength: length - transport)
            }
            buffer.setInteger(UInt16(pseudo), at: transport + 16)
            let header = VirtioNetHeader(
                flags: VirtioNetHeader.needsChecksum, gsoType: first.isIPv4 ? .tcpIPv4 : .tcpIPv6, headerLength: UInt16(headers),
                gsoSize: UInt16(first.payloadLength), checksumStart: UInt16(transport), checksumOffset: 16)
            return TUNOutgoingPacket(header: header, packet: buffer, segments: lastIndex - firstIndex + 1)
        }
    }
}

/// A TCP segment that may join a super-packet: IPv4 without options or
/// fragmentation, or IPv6 without extension headers; ACK set and nothing but
/// PSH beside it; some payload; valid checksums (a super-packet's checksums are
/// recomputed, so a damaged segment must not hide in one).
struct CoalescableSegment {
    let isIPv4: Bool
    let transportOffset: Int
    let headersLength: Int
    let length: Int
    let payloadLength: Int
    let sequence: UInt32
    let identification: UInt16
    let flags: UInt8

    static let ack: UInt8 = 0x10

    init?(_ packet: ByteBuffer) {
        guard let parsed = packet.withUnsafeReadableBytes({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    private init(isIPv4: Bool, transportOffset: Int, headersLength: Int, length: Int, sequence: UInt32, identification: UInt16, flags: UInt8) {
        self.isIPv4 = isIPv4
        self.transportOffset = transportOffset
        self.headersLength = headersLength
        self.length = length
        self.payloadLength = length - headersLength
        self.sequence = sequence
        self.identification = identification
        self.flags = flags
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> CoalescableSegment? {
        let count = bytes.count
        guard count >= 40 else { return nil }
        let isIPv4: Bool
        let transport: Int
        switch bytes[0] {
        case 0x45:
            guard bytes[9] == TCPSegmentation.tcpProtocolNumber, Int(bytes.loadBigEndianUInt16(at: 2)) == count,
                bytes.loadBigEndianUInt16(at: 6) & 0x3FFF == 0,
                InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: bytes[..<20])) == 0xFFFF
            else { return nil }
            (isIPv4, transport) = (true, 20)
        case 0x60...0x6F:
            guard count >= 60, bytes[6] == TCPSegmentation.tcpProtocolNumber, 40 + Int(bytes.loadBigEndianUInt16(at: 4)) == count else { return nil }
            (isIPv4, transport) = (false, 40)
        default:
            return nil
        }
        let tcpHeaderLength = Int(bytes[transport + 12] >> 4) * 4
        let flags = bytes[transport + 13]
        guard tcpHeaderLength >= 20, transport + tcpHeaderLength < count,
            flags & ack != 0, flags & ~(ack | TCPSegmentation.psh) == 0
        else { return nil }
        let addresses = UnsafeRawBufferPointer(rebasing: isIPv4 ? bytes[12..<20] : bytes[8..<40])
        let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: TCPSegmentation.tcpProtocolNumber, transportLength: count - transport)
        guard InternetChecksum.add(pseudo, InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: bytes[transport...]))) == 0xFFFF else { return nil }
        return CoalescableSegment(
            isIPv4: isIPv4, transportOffset: transport, headersLength: transport + tcpHeaderLength, length: count,
            sequence: bytes.loadBigEndianUInt32(at: transport + 4), identification: isIPv4 ? bytes.loadBigEndianUInt16(at: 4) : 0, flags: flags)
    }

    /// Whether `other` (same version and header lengths, checked before) has the
    /// same addresses, ports, IP fields that segmentation copies, acknowledgement
    /// number and TCP options as `mine`, the run's first packet.
    func sameFlowAndHeaders(_ mine: UnsafeRawBufferPointer, _ other: UnsafeRawBufferPointer) -> Bool {
        func equal(_ range: Range<Int>) -> Bool {
            range.allSatisfy { mine[$0] == other[$0] }
        }
        let ipSame = isIPv4
            ? equal(0..<2) && equal(6..<10) && equal(12..<20)  // version, TOS (ECN too), DF, TTL, protocol, addresses
            : equal(0..<4) && equal(6..<40)  // traffic class, flow label, next header, hop limit, addresses
        let tcp = transportOffset
        return ipSame && equal(tcp..<(tcp + 4)) && equal((tcp + 8)..<(tcp + 13)) && equal((tcp + 20)..<headersLength)
    }
}
