import CTUNShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// What one wake-up of the reader read.
struct TUNReadTally: Sendable {
    var packets = 0
    var bytes = 0
    var superPackets = 0
    var malformed = 0

    mutating func add(_ other: TUNReadTally) {
        packets += other.packets
        bytes += other.bytes
        superPackets += other.superPackets
        malformed += other.malformed
    }
}

/// The body of a TUN device's reader thread, for a device that several
/// tunnels share (the server's): wait with `poll()` for a packet or the
/// wake-up signal, read every packet that is immediately available (up to a
/// batch, `TUNPacketReads`), and route the batch right here, which hops to
/// each owning event loop once per wake-up. A device that one event loop
/// reads alone (the client's) needs no thread: `TUNLoopReader`.
struct TUNReaderLoop: Sendable {
    let reads: TUNPacketReads
    let wakeFD: CInt
    let route: @Sendable ([TunnelPacket], PacketHandOff) -> Void
    let isClosed: @Sendable () -> Bool
    let record: @Sendable (TUNReadTally) -> Void

    /// How long `poll()` sleeps before re-checking for close (the wake-up fd normally ends it sooner).
    static let pollTimeoutMilliseconds: CInt = 500
    func run() {
        let allocator = ByteBufferAllocator()
        var scratch = allocator.buffer(capacity: TUNPacketReads.readBufferSize)
        let handOff = PacketHandOff.bounded(isClosed: isClosed)
        var malformedLog = LineRateLimiter()
        let logger = reads.logger, name = reads.name
        while !isClosed() {
            var error: CInt = 0
            switch st_poll_readable(reads.deviceFD, wakeFD, Self.pollTimeoutMilliseconds, &error) {
            case 0:
                continue
            case 1:
                break
            case 2:
                return
            case 3:
                // Read once anyway: the errno says why (EBADFD once the interface is deleted).
                var batch = TUNPacketReads.Batch()
                let failure = reads.readAvailable(into: &batch, scratch: &scratch, allocator: allocator, malformedLog: &malformedLog)
                logger.error("TUN reader stopped: the device reported an error", metadata: ["device": "\(name)", "error": "\(failure ?? "no data")"])
                return
            default:
                if error == EINTR { continue }
                logger.error("TUN reader stopped: poll failed", metadata: ["device": "\(name)", "error": "\(errnoText(error))"])
                return
            }
            var batch = TUNPacketReads.Batch()
            let failure = reads.readAvailable(into: &batch, scratch: &scratch, allocator: allocator, malformedLog: &malformedLog)
            record(batch.tally)
            if !batch.packets.isEmpty { route(batch.packets, handOff) }
            if let failure {
                logger.error("TUN reader stopped: read failed", metadata: ["device": "\(name)", "error": "\(failure)"])
                return
            }
        }
    }

    /// `packet` (a read's bytes after its virtio_net_hdr) as a TCP super-packet
    /// the wire carries whole, copied.
    static func wholeSuperPacket(_ packet: UnsafeMutableRawBufferPointer, header: VirtioNetHeader, allocator: ByteBufferAllocator) -> TunnelPacket? {
        guard let segmentSize = prepareWholeSuperPacket(packet, header: header) else { return nil }
        var buffer = allocator.buffer(capacity: packet.count)
        buffer.writeBytes(UnsafeRawBufferPointer(packet))
        return TunnelPacket(bytes: buffer, segmentSize: segmentSize)
    }

    /// Makes `packet` a TCP super-packet as the wire carries it (PROTOCOL.md B8),
    /// in place: its TCP checksum field the pseudo-header's sum over the whole
    /// TCP length and its IPv4 header checksum valid, whatever the kernel left,
    /// so the receiver can hand it to its own device as it is. Returns its
    /// segment size; nil for anything else, which is split or completed as before.
    static func prepareWholeSuperPacket(_ packet: UnsafeMutableRawBufferPointer, header: VirtioNetHeader) -> UInt16? {
        // Whole only when the header the receiver will rebuild is the kernel's own.
        guard header.gsoType == .tcpIPv4 || header.gsoType == .tcpIPv6, header.gsoSize > 0,
            let (rebuilt, layout) = try? SuperPacket.header(for: UnsafeRawBufferPointer(packet), segmentSize: header.gsoSize),
            layout.segmentCount > 1, rebuilt.gsoType == header.gsoType, rebuilt.checksumStart == header.checksumStart,
            header.checksumOffset == 16
        else { return nil }
        let transport = layout.transportOffset
        if layout.isIPv4 {
            packet.storeBigEndian(UInt16(0), at: 10)
            packet.storeBigEndian(InternetChecksum.finish(InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: packet[..<transport]))), at: 10)
        }
        let addresses = UnsafeRawBufferPointer(rebasing: layout.isIPv4 ? packet[12..<20] : packet[8..<40])
        let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: TCPSegmentation.tcpProtocolNumber, transportLength: packet.count - transport)
        packet.storeBigEndian(UInt16(truncatingIfNeeded: InternetChecksum.fold(UInt64(pseudo))), at: transport + 16)
        return header.gsoSize
    }
}
