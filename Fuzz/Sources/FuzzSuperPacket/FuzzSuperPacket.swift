import NIOCore
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// A super-packet as a peer may send it (PROTOCOL.md B8): two bytes of
/// segment size, then the packet. What the receiver writes to its device
/// never traps; a super-packet it accepts has a header that matches its
/// bytes, and cutting it gives packets no longer than the headers and one
/// segment; the ordinary packets beside it are written as they came.
func fuzzSuperPacket(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard input.count >= 2 else { return 0 }
    let segmentSize = input.loadBigEndianUInt16(at: 0)
    let allocator = ByteBufferAllocator()
    var bytes = allocator.buffer(capacity: input.count - 2)
    bytes.writeBytes(UnsafeRawBufferPointer(rebasing: input[2...]))
    let packet = TunnelPacket(bytes: bytes, segmentSize: segmentSize)
    let ordinary = TunnelPacket(bytes: ByteBuffer(bytes: [0x45, 0, 0, 20]))
    let plan = TUNWritePlan([ordinary, packet, ordinary], virtioHeader: true, allocator: allocator)
    guard plan.writes.count + plan.malformed == 3, plan.writes.first?.packet == ordinary.bytes, plan.writes.last?.packet == ordinary.bytes else {
        fatalError("a batch of three became \(plan.writes.count) writes and \(plan.malformed) drops")
    }
    guard packet.isSuperPacket, plan.malformed == 0 else { return 0 }
    let header = plan.writes[1].header
    let largest = Int(header.headerLength) + Int(segmentSize)
    guard header.gsoSize == segmentSize, Int(header.headerLength) < packet.bytes.readableBytes else {
        fatalError("an accepted super-packet's header does not match it: \(header)")
    }
    let segments: [ByteBuffer]
    do {
        segments = try SuperPacket.segments(of: packet, allocator: allocator)
    } catch {
        fatalError("a super-packet the device took cannot be cut: \(error)")
    }
    for segment in segments where segment.readableBytes > largest {
        fatalError("a segment of \(segment.readableBytes) bytes, more than headers and one segment (\(largest))")
    }
    // The same super-packet on a device without offloads is cut here into the same packets.
    let cut = TUNWritePlan([packet], virtioHeader: false, allocator: allocator)
    guard cut.writes.map(\.packet) == segments else { fatalError("cutting without offloads gave other packets") }
    return 0
}
