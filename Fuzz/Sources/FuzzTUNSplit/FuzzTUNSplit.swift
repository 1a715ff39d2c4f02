import Logging
import NIOCore
@testable import SimpleTunnelServices

/// A TUN read with offloads, as the kernel could hand it over: ten bytes of
/// virtio_net_hdr, then the packet. Splitting never traps and never makes a
/// segment longer than the read; every segment of a TCP super-packet, and every
/// datagram of a UDP one, is a packet of its own length with valid checksums; and coalescing the segments
/// again and splitting that gives the same segments back. A super-packet
/// carried whole to a peer (PROTOCOL.md B8) and cut there gives the same
/// segments as cutting it here.
func fuzzTUNSplit(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let read = UnsafeRawBufferPointer(start: data, count: size)
    guard let header = VirtioNetHeader(read) else { return 0 }
    let packet = UnsafeRawBufferPointer(rebasing: read[VirtioNetHeader.size...])
    let allocator = ByteBufferAllocator()
    var segments: [ByteBuffer] = []
    do {
        try TCPSegmentation.split(packet, header: header, allocator: allocator, into: &segments)
    } catch {
        guard segments.isEmpty else { fatalError("a refused read still produced \(segments.count) packets") }
        return 0
    }
    if header.gsoType == .udpL4 {
        for segment in segments {
            guard segment.readableBytes <= packet.count else { fatalError("a datagram longer than its super-packet") }
            guard segment.withUnsafeReadableBytes({ hasValidChecksums($0, transport: Int(header.checksumStart), protocolNumber: 17) }) else {
                fatalError("a datagram with a wrong length or checksum")
            }
        }
        return 0
    }
    guard header.gsoType == .tcpIPv4 || header.gsoType == .tcpIPv6 else {
        guard segments.count == 1, segments[0].readableBytes == packet.count else { fatalError("a plain read did not stay one packet") }
        return 0
    }
    for segment in segments {
        guard segment.readableBytes <= packet.count else { fatalError("a segment longer than its super-packet") }
        guard segment.withUnsafeReadableBytes({ hasValidChecksums($0, transport: Int(header.checksumStart), protocolNumber: 6) }) else {
            fatalError("a segment with a wrong length or checksum")
        }
    }
    // The read as the device reader takes it: kept whole when the wire may carry it so.
    var taken = TUNPacketReads.Batch()
    var readBuffer = ByteBuffer(bytes: read)
    var log = LineRateLimiter()
    _ = reads.take(&readBuffer, allocator: allocator, into: &taken, malformedLog: &log)
    if taken.packets.count == 1, let whole = taken.packets.first, whole.segmentSize != 0 {
        guard let cut = try? SuperPacket.segments(of: whole, allocator: allocator), cut == segments else {
            fatalError("a super-packet cut by the peer differs from the one cut here")
        }
    }
    let again = TCPCoalescing.coalesce(segments, allocator: allocator).flatMap { item -> [ByteBuffer] in
        guard item.segments > 1 else { return [item.packet] }
        var out: [ByteBuffer] = []
        do {
            try item.packet.withUnsafeReadableBytes { try TCPSegmentation.split($0, header: item.header, allocator: allocator, into: &out) }
        } catch {
            fatalError("the kernel would refuse a super-packet we made: \(error)")
        }
        return out
    }
    guard again == segments else { fatalError("coalescing and splitting changed the segments") }
    return 0
}

private let reads = TUNPacketReads(
    deviceFD: -1, name: "fuzz", virtioHeader: true, logger: Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }
)

/// The IP length matches, and the IPv4 header and TCP (6) or UDP (17) checksums verify.
private func hasValidChecksums(_ bytes: UnsafeRawBufferPointer, transport: Int, protocolNumber: UInt8) -> Bool {
    let isIPv4 = bytes[0] >> 4 == 4
    let ipLength = isIPv4 ? Int(bytes.loadBigEndianUInt16(at: 2)) : 40 + Int(bytes.loadBigEndianUInt16(at: 4))
    guard ipLength == bytes.count else { return false }
    if isIPv4, InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: bytes[..<transport])) != 0xFFFF { return false }
    let addresses = UnsafeRawBufferPointer(rebasing: isIPv4 ? bytes[12..<20] : bytes[8..<40])
    let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: protocolNumber, transportLength: bytes.count - transport)
    return InternetChecksum.add(pseudo, InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: bytes[transport...]))) == 0xFFFF
}
