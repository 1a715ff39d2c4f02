import NIOCore
import Testing
@testable import SimpleTunnelServices

/// Splitting the kernel's TCP super-packets (reads) and coalescing segments
/// into them (writes), checked with the reference checksum.
@Suite("TUN offloads: split and coalesce")
struct TUNOffloadTests {
    let allocator = ByteBufferAllocator()

    func split(_ packet: [UInt8], _ header: VirtioNetHeader) throws -> [[UInt8]] {
        var output: [ByteBuffer] = []
        try packet.withUnsafeBytes { bytes in
            try TCPSegmentation.split(bytes, header: header, allocator: allocator, into: &output)
        }
        return output.map { Array($0.readableBytesView) }
    }

    func tsoHeader(_ flow: TCPTestFlow, gsoSize: Int) -> VirtioNetHeader {
        VirtioNetHeader(
            flags: VirtioNetHeader.needsChecksum, gsoType: flow.isIPv4 ? .tcpIPv4 : .tcpIPv6, headerLength: UInt16(flow.headersLength),
            gsoSize: UInt16(gsoSize), checksumStart: UInt16(flow.ipHeaderLength), checksumOffset: 16)
    }

    @Test func theChecksumMatchesTheReferenceForEveryLengthAndAlignment() {
        // Short lengths one by one, then packet sizes where the vectorized loop does nearly all the work.
        for length in Array(0..<70) + [127, 128, 129, 1399, 1400, 1401, 9001, 65_535] {
            let bytes = TCPTestFlow.payload(length + 3, from: length * 5)
            for start in 0..<3 {
                let slice = Array(bytes[start..<(start + length)])
                let ours = slice.withUnsafeBytes { InternetChecksum.finish(InternetChecksum.sum($0)) }
                #expect(ours == IPv4TestPackets.checksum(slice), "length \(length) at \(start)")
            }
        }
    }

    @Test(arguments: [true, false])
    func aSuperPacketIsCutIntoSegmentsWithTheirOwnLengthsSequenceNumbersFlagsAndChecksums(isIPv4: Bool) throws {
        var flow = TCPTestFlow(isIPv4: isIPv4)
        flow.options = TCPTestFlow.timestamps
        let mss = 1000
        let payload = TCPTestFlow.payload(3 * mss + 123)
        let flags = TCPTestFlow.ack | TCPTestFlow.psh | TCPTestFlow.fin | TCPTestFlow.cwr
        let superPacket = flow.superPacket(sequence: 0xFFFF_FC00, payload: payload, flags: flags, identification: 0xFFFE)
        let segments = try split(superPacket, tsoHeader(flow, gsoSize: mss))

        #expect(segments.count == 4)
        #expect(segments.map(\.count) == [mss, mss, mss, 123].map { $0 + flow.headersLength }, "the last segment is the short one")
        #expect(segments.map(TCPTestChecks.ipLength) == segments.map(\.count))
        #expect(segments.allSatisfy(TCPTestChecks.checksumsVerify))
        // Sequence numbers wrap like TCP's.
        #expect(segments.map(TCPTestChecks.sequence) == [0xFFFF_FC00, 0xFFFF_FFE8, 0x3D0, 0x7B8])
        #expect(segments.map(TCPTestChecks.flags) == [
            TCPTestFlow.ack | TCPTestFlow.cwr, TCPTestFlow.ack, TCPTestFlow.ack, TCPTestFlow.ack | TCPTestFlow.psh | TCPTestFlow.fin,
        ], "CWR on the first only, PSH and FIN on the last only")
        if isIPv4 {
            #expect(segments.map(TCPTestChecks.identification) == [0xFFFE, 0xFFFF, 0, 1])
        }
        #expect(segments.flatMap(TCPTestChecks.payload) == payload)
        // Options and the other header bytes are the super-packet's.
        for segment in segments {
            let tcp = flow.ipHeaderLength
            #expect(Array(segment[(tcp + 20)..<flow.headersLength]) == TCPTestFlow.timestamps)
        }
    }

    @Test(arguments: [true, false])
    func aSuperPacketThatFitsOneSegmentComesOutAsOneValidPacket(isIPv4: Bool) throws {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let superPacket = flow.superPacket(sequence: 5, payload: TCPTestFlow.payload(600), flags: TCPTestFlow.ack | TCPTestFlow.psh)
        let segments = try split(superPacket, tsoHeader(flow, gsoSize: 1400))
        #expect(segments == [flow.segment(sequence: 5, payload: TCPTestFlow.payload(600), flags: TCPTestFlow.ack | TCPTestFlow.psh, identification: 7)])
    }

    @Test(arguments: [true, false])
    func aPacketWhoseChecksumTheKernelLeftToUsGetsItCompleted(isIPv4: Bool) throws {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let partial = flow.superPacket(sequence: 1, payload: TCPTestFlow.payload(301))
        #expect(!TCPTestChecks.checksumsVerify(partial))
        let header = VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, checksumStart: UInt16(flow.ipHeaderLength), checksumOffset: 16)
        let completed = try split(partial, header)
        #expect(completed == [flow.segment(sequence: 1, payload: TCPTestFlow.payload(301), identification: 7)])
    }

    @Test func aUDPChecksumThatComesOutZeroIsWrittenAsAllOnes() throws {
        // Words from the checksum start summing to 0xFFFF: the completed checksum is zero.
        let packet = [UInt8](repeating: 0, count: 20) + [0xFF, 0xFF, 0, 0, 0, 0, 0, 0]
        let udp = try split(packet, VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, checksumStart: 20, checksumOffset: 6))
        #expect(udp[0][26...27] == [0xFF, 0xFF], "zero would mean no checksum")
        let other = try split(packet, VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, checksumStart: 20, checksumOffset: 4))
        #expect(other[0][24...25] == [0, 0], "only UDP maps zero")
    }

    @Test func aPacketWithoutOffloadWorkPassesUnchanged() throws {
        let udp = Array(IPv4TestPackets.udp(from: IPv4Address(10, 0, 0, 1), 1, to: IPv4Address(10, 0, 0, 2), 2, payload: [1, 2, 3]).readableBytesView)
        #expect(try split(udp, .plain) == [udp])
        let notIP: [UInt8] = [0xAB, 0xCD]
        #expect(try split(notIP, .plain) == [notIP])
    }

    @Test func headersThatDoNotFitThePacketAreRefusedWithoutOutput() {
        let flow = TCPTestFlow(isIPv4: true)
        let packet = flow.superPacket(sequence: 1, payload: TCPTestFlow.payload(3000))
        var cases: [VirtioNetHeader] = []
        var header = tsoHeader(flow, gsoSize: 1000)
        header.gsoSize = 0
        cases.append(header)
        header = tsoHeader(flow, gsoSize: 1000)
        header.checksumStart = 24
        cases.append(header)
        header = tsoHeader(flow, gsoSize: 1000)
        header.checksumOffset = 6
        cases.append(header)
        header = tsoHeader(flow, gsoSize: 1000)
        header.gsoTypeByte = VirtioNetHeader.GSOType.tcpIPv6.rawValue
        cases.append(header)
        header = tsoHeader(flow, gsoSize: 1000)
        header.gsoTypeByte = VirtioNetHeader.GSOType.udpL4.rawValue
        cases.append(header)
        header = tsoHeader(flow, gsoSize: 1)
        cases.append(header)
        cases.append(VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, checksumStart: 5000, checksumOffset: 16))
        cases.append(VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, checksumStart: UInt16(packet.count - 1), checksumOffset: 0))
        for header in cases {
            #expect(throws: TUNOffloadError.self, "\(header)") { try split(packet, header) }
        }
        // The IP lengths must agree with what was read.
        #expect(throws: TUNOffloadError.self) { try split(Array(packet.dropLast()), tsoHeader(flow, gsoSize: 1000)) }
        #expect(throws: TUNOffloadError.self) { try split(Array(packet.prefix(30)), tsoHeader(flow, gsoSize: 1000)) }
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { VirtioNetHeader($0) } == nil)
    }

    @Test func theSmallestMSSLinuxSendsStillCutsAFullSuperPacket() throws {
        var flow = TCPTestFlow(isIPv4: true)
        flow.options = [UInt8](repeating: 1, count: 40)  // the longest TCP header: 40 bytes of NOPs
        let payload = TCPTestFlow.payload(65_535 - flow.headersLength)
        let segments = try split(flow.superPacket(sequence: 1, payload: payload), tsoHeader(flow, gsoSize: 48))
        #expect(segments.count == (payload.count + 47) / 48)
        #expect(segments.flatMap(TCPTestChecks.payload) == payload)
    }

    @Test func extensionHeadersRepeatedInEverySegmentCannotMakeOneReadCostMegabytes() throws {
        // 30,000 bytes of IPv6 extension headers in front of TCP, cut into 16-byte
        // segments, would repeat them 1,875 times: 56 MB from one 64 KiB read.
        let flow = TCPTestFlow(isIPv4: false)
        var packet = flow.superPacket(sequence: 1, payload: TCPTestFlow.payload(30_000))
        let extensions = 30_000
        packet.insert(contentsOf: [UInt8](repeating: 0, count: extensions), at: 40)
        packet[6] = 60  // destination options
        packet.replaceSubrange(4..<6, with: TCPTestFlow.bigEndian(UInt16(packet.count - 40)))
        var header = tsoHeader(flow, gsoSize: 16)
        header.checksumStart = UInt16(40 + extensions)
        header.headerLength = UInt16(40 + extensions + 20)
        #expect(throws: TUNOffloadError.self) { try split(packet, header) }
        // The same headers cut into large segments stay within the bound, and split.
        header.gsoSize = 15_000
        #expect(try split(packet, header).count == 2)
    }

    @Test func randomHeadersAndBytesNeverCrashTheSplitter() {
        var generator = SystemRandomNumberGenerator()
        let flow = TCPTestFlow(isIPv4: true)
        let valid = flow.superPacket(sequence: 1, payload: TCPTestFlow.payload(2000))
        for round in 0..<3000 {
            var packet = round % 2 == 0 ? valid : (0..<Int.random(in: 0..<200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, !packet.isEmpty { packet[Int.random(in: 0..<min(60, packet.count), using: &generator)] = .random(in: 0...255, using: &generator) }
            let header = VirtioNetHeader(
                flags: .random(in: 0...3, using: &generator), gsoType: [.none, .tcpIPv4, .tcpIPv6].randomElement(using: &generator) ?? .none,
                headerLength: .random(in: 0...100, using: &generator), gsoSize: .random(in: 0...2000, using: &generator),
                checksumStart: .random(in: 0...100, using: &generator), checksumOffset: .random(in: 0...20, using: &generator))
            let segments = try? split(packet, header)
            for segment in segments ?? [] where header.gsoType != VirtioNetHeader.GSOType.none {
                #expect(segment.count <= max(packet.count, 40 + 60 + 2000))
            }
        }
    }

    // MARK: Coalescing

    func coalesce(_ packets: [[UInt8]]) -> [TUNOutgoingPacket] {
        TCPCoalescing.coalesce(packets.map { ByteBuffer(bytes: $0) }, allocator: allocator)
    }

    /// What the kernel does with a super-packet we write: the splitter recomputes
    /// every checksum, so this also checks the header we wrote.
    func kernelSegments(_ item: TUNOutgoingPacket) throws -> [[UInt8]] {
        try split(Array(item.packet.readableBytesView), item.header)
    }

    @Test(arguments: [true, false])
    func consecutiveSegmentsOfOneFlowBecomeOneSuperPacketTheKernelCutsBackIntoThem(isIPv4: Bool) throws {
        var flow = TCPTestFlow(isIPv4: isIPv4)
        flow.options = TCPTestFlow.timestamps
        let sizes = [1300, 1300, 1300, 700]
        var sequence: UInt32 = 0xFFFF_F000
        var segments: [[UInt8]] = []
        for (index, size) in sizes.enumerated() {
            let flags = index == sizes.count - 1 ? TCPTestFlow.ack | TCPTestFlow.psh : TCPTestFlow.ack
            segments.append(flow.segment(sequence: sequence, payload: TCPTestFlow.payload(size, from: Int(sequence &- 0xFFFF_F000)), flags: flags, identification: UInt16(100 + index)))
            sequence &+= UInt32(size)
        }
        let output = coalesce(segments)
        try #require(output.count == 1)
        let item = output[0]
        #expect(item.segments == 4)
        #expect(item.header.gsoType == (isIPv4 ? .tcpIPv4 : .tcpIPv6))
        #expect(item.header.gsoSize == 1300)
        #expect(item.header.flags == VirtioNetHeader.needsChecksum)
        #expect(Int(item.header.checksumStart) == flow.ipHeaderLength && item.header.checksumOffset == 16)
        #expect(Int(item.header.headerLength) == flow.headersLength)
        let bytes = Array(item.packet.readableBytesView)
        #expect(TCPTestChecks.ipLength(bytes) == bytes.count)
        if isIPv4 { #expect(IPv4TestPackets.checksum(bytes[..<20]) == 0, "the super-packet's own IPv4 header checksum is valid") }
        // The TCP checksum field holds the pseudo-header's sum, as the kernel expects.
        let field = UInt16(bytes[flow.ipHeaderLength + 16]) << 8 | UInt16(bytes[flow.ipHeaderLength + 17])
        #expect(field == ~IPv4TestPackets.checksum(flow.pseudoHeader(transportLength: bytes.count - flow.ipHeaderLength)))
        #expect(try kernelSegments(item) == segments)
    }

    @Test func onlyAdjacentInOrderSegmentsWithMatchingHeadersJoin() throws {
        let flow = TCPTestFlow(isIPv4: true)
        var other = flow
        other.sourcePort = 40_001
        var otherTTL = flow
        otherTTL.ttl = 63
        var otherAck = flow
        otherAck.acknowledgement += 1
        let size = 1000
        func data(_ index: Int, _ f: TCPTestFlow = flow, flags: UInt8 = TCPTestFlow.ack, id: UInt16? = nil, size: Int = 1000, valid: Bool = true) -> [UInt8] {
            f.segment(sequence: UInt32(index * 1000), payload: TCPTestFlow.payload(size, from: index * 1000), flags: flags, identification: id ?? UInt16(index), validChecksum: valid)
        }
        let udp = Array(IPv4TestPackets.udp(from: IPv4Address(10, 90, 0, 2), 1, to: IPv4Address(198, 18, 2, 2), 2, payload: [1]).readableBytesView)
        let cases: [(String, [[UInt8]], [Int])] = [
            ("another flow between", [data(0), data(1, other), data(1)], [1, 1, 1]),
            ("a gap in the sequence", [data(0), data(2)], [1, 1]),
            ("out of order", [data(1), data(0)], [1, 1]),
            ("a PSH ends the run", [data(0), data(1, flags: TCPTestFlow.ack | TCPTestFlow.psh), data(2)], [2, 1]),
            ("a short segment ends the run", [data(0), data(1, size: 500), data(2)], [2, 1]),
            ("a longer segment after the first", [data(0, size: 500), data(1)], [1, 1]),
            ("FIN, SYN or no ACK never join", [data(0), data(1, flags: TCPTestFlow.ack | TCPTestFlow.fin)], [1, 1]),
            ("a damaged checksum never joins", [data(0), data(1, valid: false), data(2)], [1, 1, 1]),
            ("an IPv4 identification gap", [data(0, id: 1), data(1, id: 5)], [1, 1]),
            ("another TTL", [data(0), data(1, otherTTL)], [1, 1]),
            ("another acknowledgement", [data(0), data(1, otherAck)], [1, 1]),
            ("non-TCP passes between runs", [data(0), data(1), udp, data(2), data(3)], [2, 1, 2]),
        ]
        _ = size
        for (name, packets, expected) in cases {
            let output = coalesce(packets)
            #expect(output.map(\.segments) == expected, "\(name)")
            // Nothing is lost or reordered: the kernel's view of the output is the input.
            let unpacked = try output.flatMap { $0.segments == 1 ? [Array($0.packet.readableBytesView)] : try kernelSegments($0) }
            #expect(unpacked == packets, "\(name)")
            #expect(output.filter { $0.segments == 1 }.allSatisfy { $0.header == .plain }, "\(name)")
        }
    }

    @Test func aSuperPacketStaysWithinWhatAnIPLengthCanSay() throws {
        let flow = TCPTestFlow(isIPv4: true)
        let packets = (0..<60).map { flow.segment(sequence: UInt32($0 * 1400), payload: TCPTestFlow.payload(1400, from: $0 * 1400), identification: UInt16($0)) }
        let output = coalesce(packets)
        #expect(output.allSatisfy { $0.packet.readableBytes <= 65_535 })
        #expect(output.map(\.segments).reduce(0, +) == 60)
        #expect(output.count == 2)
        #expect(try output.flatMap(kernelSegments) == packets)
    }
}

/// Cutting the kernel's UDP super-packets (USO reads) into datagrams.
@Suite("TUN offloads: UDP segmentation")
struct UDPSegmentationTests {
    let allocator = ByteBufferAllocator()

    /// What the kernel hands over for a `UDP_SEGMENT` send: one packet of every
    /// payload byte, the UDP checksum field holding only the pseudo-header's sum.
    static func superPacket(isIPv4: Bool, payload: [UInt8], identification: UInt16 = 0xFFFE) -> [UInt8] {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let udpLength = 8 + payload.count
        var ip = flow.ipHeader(payloadLength: udpLength, identification: identification)
        if isIPv4 {
            ip[9] = 17
            (ip[10], ip[11]) = (0, 0)
            let sum = IPv4TestPackets.checksum(ip)
            (ip[10], ip[11]) = (UInt8(sum >> 8), UInt8(sum & 0xFF))
        } else {
            ip[6] = 17
        }
        let pseudo = isIPv4
            ? flow.addresses + [0, 17] + TCPTestFlow.bigEndian(UInt16(udpLength))
            : flow.addresses + TCPTestFlow.bigEndian(UInt32(udpLength)) + [0, 0, 0, 17]
        let partial = ~IPv4TestPackets.checksum(pseudo)
        return ip + TCPTestFlow.bigEndian(UInt16(4433)) + TCPTestFlow.bigEndian(UInt16(443)) + TCPTestFlow.bigEndian(UInt16(udpLength))
            + TCPTestFlow.bigEndian(partial) + payload
    }

    static func header(isIPv4: Bool, gsoSize: Int) -> VirtioNetHeader {
        VirtioNetHeader(
            flags: VirtioNetHeader.needsChecksum, gsoType: .udpL4, headerLength: UInt16((isIPv4 ? 20 : 40) + 8),
            gsoSize: UInt16(gsoSize), checksumStart: isIPv4 ? 20 : 40, checksumOffset: 6)
    }

    func split(_ packet: [UInt8], _ header: VirtioNetHeader) throws -> [[UInt8]] {
        var output: [ByteBuffer] = []
        try packet.withUnsafeBytes { try TCPSegmentation.split($0, header: header, allocator: allocator, into: &output) }
        return output.map { Array($0.readableBytesView) }
    }

    /// The IPv4 header checksum (when IPv4) and the UDP checksum verify, and the lengths are the datagram's.
    static func verifies(_ datagram: [UInt8]) -> Bool {
        let isIPv4 = datagram[0] >> 4 == 4
        let udp = isIPv4 ? 20 : 40
        let udpLength = Int(datagram[udp + 4]) << 8 | Int(datagram[udp + 5])
        guard udpLength == datagram.count - udp, TCPTestChecks.ipLength(datagram) == datagram.count else { return false }
        if isIPv4, IPv4TestPackets.checksum(datagram[..<udp]) != 0 { return false }
        let addresses = isIPv4 ? Array(datagram[12..<20]) : Array(datagram[8..<40])
        let pseudo = isIPv4
            ? addresses + [0, 17] + TCPTestFlow.bigEndian(UInt16(udpLength))
            : addresses + TCPTestFlow.bigEndian(UInt32(udpLength)) + [0, 0, 0, 17]
        return datagram[udp + 6] | datagram[udp + 7] != 0 && IPv4TestPackets.checksum(pseudo + datagram[udp...]) == 0
    }

    @Test(arguments: [true, false])
    func aUDPSuperPacketIsCutIntoDatagramsWithTheirOwnLengthsIdentificationsAndChecksums(isIPv4: Bool) throws {
        let payload = TCPTestFlow.payload(3 * 1200 + 77)
        let datagrams = try split(Self.superPacket(isIPv4: isIPv4, payload: payload), Self.header(isIPv4: isIPv4, gsoSize: 1200))
        let headers = (isIPv4 ? 20 : 40) + 8
        #expect(datagrams.map(\.count) == [1200, 1200, 1200, 77].map { $0 + headers }, "the last datagram is the short one")
        #expect(datagrams.allSatisfy(Self.verifies))
        #expect(datagrams.flatMap { $0[headers...] } == payload)
        if isIPv4 {
            #expect(datagrams.map(TCPTestChecks.identification) == [0xFFFE, 0xFFFF, 0, 1], "as the kernel numbers them")
        }
    }

    @Test func headersThatDoNotFitTheUDPSuperPacketAreRefusedWithoutOutput() {
        let packet = Self.superPacket(isIPv4: true, payload: TCPTestFlow.payload(3000))
        var cases: [(String, [UInt8], VirtioNetHeader)] = []
        var header = Self.header(isIPv4: true, gsoSize: 1000)
        header.gsoSize = 0
        cases.append(("GSO size 0", packet, header))
        header = Self.header(isIPv4: true, gsoSize: 1000)
        header.checksumOffset = 16
        cases.append(("TCP's checksum offset", packet, header))
        header = Self.header(isIPv4: true, gsoSize: 1000)
        header.checksumStart = 24
        cases.append(("a checksum start inside the IP header", packet, header))
        var tcp = packet
        tcp[9] = 6
        cases.append(("a TCP packet", tcp, Self.header(isIPv4: true, gsoSize: 1000)))
        cases.append(("a length that is not the read's", Array(packet.dropLast()), Self.header(isIPv4: true, gsoSize: 1000)))
        cases.append(("more datagrams than the bound", packet, Self.header(isIPv4: true, gsoSize: 1)))
        header = Self.header(isIPv4: true, gsoSize: 1000)
        header.gsoTypeByte = VirtioNetHeader.GSOType.udp.rawValue
        cases.append(("UFO, never enabled", packet, header))
        for (name, bytes, header) in cases {
            #expect(throws: TUNOffloadError.self, "\(name)") { try split(bytes, header) }
        }
    }
}
