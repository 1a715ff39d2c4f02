import Logging
import NIOCore
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// TCP super-packets carried whole between two Linux peers (PROTOCOL.md B8):
/// what the reader hands over, what the receiver rebuilds and checks before
/// its device sees it, and the cut for a peer or device that takes none.
@Suite("Super-packets: read whole, checked, rebuilt and cut")
struct SuperPacketTests {
    let allocator = ByteBufferAllocator()
    static let mss = 1000

    func kernelRead(_ flow: TCPTestFlow, payload: Int = 3 * mss + 123, flags: UInt8 = TCPTestFlow.ack | TCPTestFlow.psh) -> ([UInt8], VirtioNetHeader) {
        let packet = flow.superPacket(sequence: 0x1000, payload: TCPTestFlow.payload(payload), flags: flags, identification: 0x2000)
        let header = VirtioNetHeader(
            flags: VirtioNetHeader.needsChecksum, gsoType: flow.isIPv4 ? .tcpIPv4 : .tcpIPv6, headerLength: UInt16(flow.headersLength),
            gsoSize: UInt16(Self.mss), checksumStart: UInt16(flow.ipHeaderLength), checksumOffset: 16)
        return (packet, header)
    }

    func kernelSplit(_ packet: [UInt8], _ header: VirtioNetHeader) throws -> [ByteBuffer] {
        var output: [ByteBuffer] = []
        try packet.withUnsafeBytes { try TCPSegmentation.split($0, header: header, allocator: allocator, into: &output) }
        return output
    }

    static let reads = TUNPacketReads(deviceFD: -1, name: "test", virtioHeader: true, logger: Logger(label: "test"))

    /// The read as the device reader takes it: its super-packet kept whole, or nil when it was split or dropped.
    func whole(_ packet: [UInt8], _ header: VirtioNetHeader) -> TunnelPacket? {
        var read = ByteBuffer(bytes: header.bytes + packet)
        var batch = TUNPacketReads.Batch()
        var log = LineRateLimiter()
        _ = Self.reads.take(&read, allocator: allocator, into: &batch, malformedLog: &log)
        guard batch.packets.count == 1, let taken = batch.packets.first, taken.segmentSize != 0 else { return nil }
        return taken
    }

    @Test(arguments: [true, false])
    func aSuperPacketCutByThePeerGivesTheSegmentsTheSenderWouldHaveSent(isIPv4: Bool) throws {
        var flow = TCPTestFlow(isIPv4: isIPv4)
        flow.options = TCPTestFlow.timestamps
        let (packet, header) = kernelRead(flow, flags: TCPTestFlow.ack | TCPTestFlow.psh | TCPTestFlow.cwr)
        let carried = try #require(whole(packet, header))
        #expect(carried.segmentSize == UInt16(Self.mss))
        #expect(carried.bytes.readableBytes == packet.count, "whole: not cut, nothing added")
        #expect(carried.protocolNumber == (isIPv4 ? TunnelPacket.ProtocolNumber.ipv4 : TunnelPacket.ProtocolNumber.ipv6))
        let cut = try SuperPacket.segments(of: carried, allocator: allocator)
        #expect(cut == (try kernelSplit(packet, header)))
        #expect(cut.count == 4)
        #expect(cut.map { Array($0.readableBytesView) }.allSatisfy(TCPTestChecks.checksumsVerify))
    }

    @Test(arguments: [true, false])
    func theReceiverRebuildsTheKernelsOwnHeaderFromTheBytes(isIPv4: Bool) throws {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let (packet, header) = kernelRead(flow)
        let carried = try #require(whole(packet, header))
        let plan = TUNWritePlan([carried], virtioHeader: true, allocator: allocator)
        #expect(plan.malformed == 0)
        let write = try #require(plan.writes.first)
        #expect(plan.writes.count == 1)
        #expect(write.header == header, "type, lengths, checksum start and offset as the sending kernel had them")
        #expect(write.segments == 4)
        // What the kernel completes per segment: the pseudo-header's sum over the whole TCP length stands in the field.
        #expect(write.packet == carried.bytes)
    }

    /// A read NIO's receive pool still references (the client's loop reader's
    /// first): handed over without a copy when its fields are already the
    /// wire's, and otherwise fixed in a copy, leaving the pool's bytes alone.
    @Test(arguments: [true, false])
    func aSharedReadIsHandedOverUncopiedUnlessAFieldMustChange(isIPv4: Bool) throws {
        let flow = TCPTestFlow(isIPv4: isIPv4)
        let (packet, header) = kernelRead(flow, payload: 20 * Self.mss)
        let carried = try #require(whole(packet, header))
        #expect(carried.segmentSize == UInt16(Self.mss))
        let prepared = Array(carried.bytes.readableBytesView)
        // A kernel that left the TCP checksum field empty.
        var emptyChecksum = prepared
        emptyChecksum[flow.ipHeaderLength + 16] = 0
        emptyChecksum[flow.ipHeaderLength + 17] = 0
        #expect(emptyChecksum != prepared)
        for (bytes, alreadyTheWires) in [(prepared, true), (emptyChecksum, false)] {
            var read = ByteBuffer(bytes: header.bytes + bytes)
            let pool = read
            var batch = TUNPacketReads.Batch()
            var log = LineRateLimiter()
            #expect(Self.reads.take(&read, allocator: allocator, into: &batch, malformedLog: &log), "handed over")
            let taken = try #require(batch.packets.first)
            #expect(batch.packets.count == 1 && taken.segmentSize == UInt16(Self.mss))
            #expect(Array(taken.bytes.readableBytesView) == prepared, "the wire's fields")
            #expect(Array(pool.readableBytesView) == header.bytes + bytes, "the pool's bytes untouched")
            let takenStart = taken.bytes.withUnsafeReadableBytes { $0.baseAddress }
            let poolPacketStart = pool.withUnsafeReadableBytes { $0.baseAddress.map { $0 + VirtioNetHeader.size } }
            #expect((takenStart == poolPacketStart) == alreadyTheWires, "copied only when a field changed")
        }
    }

    @Test func aSuperPacketWithCWRIsMarkedForECNAsTheKernelMarksIt() throws {
        let (packet, _) = kernelRead(TCPTestFlow(isIPv4: true), flags: TCPTestFlow.ack | TCPTestFlow.cwr)
        let header = try packet.withUnsafeBytes { try SuperPacket.header(for: $0, segmentSize: UInt16(Self.mss)).0 }
        #expect(header.gsoTypeByte == VirtioNetHeader.GSOType.tcpIPv4.rawValue | VirtioNetHeader.gsoECNBit)
    }

    @Test func aReadThatFitsOneSegmentOrHasExtensionHeadersIsCutAtTheSender() throws {
        let (small, smallHeader) = kernelRead(TCPTestFlow(isIPv4: true), payload: 600)
        #expect(whole(small, smallHeader) == nil, "one segment: an ordinary packet")
        var (packet, header) = kernelRead(TCPTestFlow(isIPv4: false))
        header.checksumStart = 48  // the kernel says TCP starts after an extension header
        #expect(whole(packet, header) == nil)
    }

    /// Each case is one way a peer's super-packet can fail to hold together.
    static func broken() -> [(String, [UInt8], UInt16)] {
        let flow = TCPTestFlow(isIPv4: true)
        let good = flow.superPacket(sequence: 1, payload: TCPTestFlow.payload(3000), flags: TCPTestFlow.ack)
        var udp = good
        udp[9] = 17
        var longer = good
        longer[3] &+= 1
        var fragment = good
        fragment[6] = 0x20
        var extensionHeader = TCPTestFlow(isIPv4: false).superPacket(sequence: 1, payload: TCPTestFlow.payload(3000), flags: TCPTestFlow.ack)
        extensionHeader[6] = 0  // hop-by-hop options first
        return [
            ("not TCP", udp, 1000),
            ("an IPv4 length that is not the packet's", longer, 1000),
            ("a fragment", fragment, 1000),
            ("IPv6 with an extension header", extensionHeader, 1000),
            ("more segments than any MSS makes", good, 1),
            ("no IP header at all", [0x45, 0, 0, 20], 1000),
            ("headers without payload", flow.superPacket(sequence: 1, payload: [], flags: TCPTestFlow.ack), 1),
        ]
    }

    @Test func aSuperPacketThatDoesNotHoldTogetherIsDroppedAndCountedAndItsNeighboursStillGo() throws {
        let neighbour = TunnelPacket(bytes: ipv4Packet(from: "10.90.0.2", to: "198.18.2.2"))
        for (name, bytes, segmentSize) in Self.broken() {
            let packet = TunnelPacket(bytes: ByteBuffer(bytes: bytes), segmentSize: segmentSize)
            for virtioHeader in [true, false] {
                let plan = TUNWritePlan([neighbour, packet, neighbour], virtioHeader: virtioHeader, allocator: allocator)
                #expect(plan.malformed == 1, "\(name), virtio header \(virtioHeader)")
                #expect(plan.writes.map(\.packet) == [neighbour.bytes, neighbour.bytes], "\(name)")
            }
        }
    }

    @Test(arguments: [true, false])
    func withoutAVirtioHeaderASuperPacketIsCutIntoValidPacketsBeforeTheWrite(isIPv4: Bool) throws {
        let (packet, header) = kernelRead(TCPTestFlow(isIPv4: isIPv4))
        let carried = try #require(whole(packet, header))
        let plan = TUNWritePlan([carried], virtioHeader: false, allocator: allocator)
        #expect(plan.writes.map(\.packet) == (try kernelSplit(packet, header)))
        #expect(plan.writes.allSatisfy { $0.segments == 1 && $0.header == .plain })
    }
}

/// The wire's side of super-packets: the offer, the sizes beside `packets`,
/// and what a peer may not send there.
@Suite("Super-packets on the wire")
struct SuperPacketWireTests {
    func decode(_ entries: [String: PropertyListValue]) throws(TunnelMessageDecodingError) -> TunnelMessage {
        try TunnelMessage(propertyList: .dictionary(entries))
    }

    static func packets(sizes: PropertyListValue?) -> [String: PropertyListValue] {
        var entries: [String: PropertyListValue] = [
            "identifier": .integer(1), "command": .integer(8),
            "packets": .array([.data(ByteBuffer(bytes: [0x45])), .data(ByteBuffer(bytes: [0x60]))]),
            "protocols": .array([.integer(2), .integer(30)]),
        ]
        entries["segment-sizes"] = sizes
        return entries
    }

    @Test func theSizesTravelBesideThePacketsAndAreLeftOutWhenAllAreOrdinary() throws {
        let message = try decode(Self.packets(sizes: .array([.integer(1348), .integer(0)])))
        guard case .packets(1, let packets) = message else { Issue.record("not packets: \(message)"); return }
        #expect(packets.map(\.segmentSize) == [1348, 0])
        let ordinary = TunnelMessage.packets(identifier: 1, packets: packets.map { TunnelPacket(bytes: $0.bytes, protocolNumber: $0.protocolNumber) })
        #expect(!ordinary.propertyListEntries.contains { $0.key == "segment-sizes" }, "Apple's peers never see the key")
        #expect(try decode(Self.packets(sizes: nil)) == ordinary)
    }

    @Test func sizesThatDoNotFitThePacketsAreRefusedNamingTheKey() {
        for sizes: PropertyListValue in [
            .array([.integer(1348)]),
            .array([.integer(1348), .string("0")]),
            .array([.integer(65_536), .integer(0)]),
            .array([.integer(-1), .integer(0)]),
            .integer(1348),
        ] {
            #expect(throws: TunnelMessageDecodingError.self, "\(sizes)") { try decode(Self.packets(sizes: sizes)) }
            do {
                _ = try decode(Self.packets(sizes: sizes))
            } catch {
                #expect(error.key == "segment-sizes", "\(error)")
            }
        }
    }

    @Test func anIPOpenOffersSuperPacketsOnlyWhenAsked() throws {
        let offer = TunnelMessage.open(identifier: 5, request: .ip(offersSuperPackets: true))
        #expect(offer.propertyListEntries.contains { $0.key == "super-packets" && $0.value == .integer(1) })
        #expect(!TunnelMessage.open(identifier: 5, request: .plainIP).propertyListEntries.contains { $0.key == "super-packets" })
        let apple: [String: PropertyListValue] = ["identifier": .integer(5), "command": .integer(6), "tunnel-type": .integer(1)]
        #expect(try decode(apple) == .open(identifier: 5, request: .plainIP))
        var zero = apple
        zero["super-packets"] = .integer(0)
        #expect(try decode(zero) == .open(identifier: 5, request: .plainIP))
        var mistyped = apple
        mistyped["super-packets"] = .string("yes")
        #expect(throws: TunnelMessageDecodingError.self) { try decode(mistyped) }
    }
}
