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

/// The body of a TUN device's reader thread: wait with `poll()` for a packet
/// or the wake-up signal, read every packet that is immediately available
/// (one `read()` each, up to a batch), and route the batch right here, which
/// hops to each owning event loop once per wake-up. A TCP super-packet is
/// delivered whole, with its segment size (PROTOCOL.md B8); whoever sends it
/// to a peer that takes none splits it.
struct TUNReaderLoop: Sendable {
    let deviceFD: CInt
    let wakeFD: CInt
    let name: String
    /// Every read starts with a virtio_net_hdr.
    let virtioHeader: Bool
    let route: @Sendable ([TunnelPacket], PacketHandOff) -> Void
    let isClosed: @Sendable () -> Bool
    let record: @Sendable (TUNReadTally) -> Void
    let logger: Logger

    /// Larger than any IPv4/IPv6 packet without jumbo options (a TSO super-packet
    /// included) and its virtio_net_hdr, so no MTU truncates a read.
    static let readBufferSize = 65_535 + 40 + VirtioNetHeader.size
    /// How long `poll()` sleeps before re-checking for close (the wake-up fd normally ends it sooner).
    static let pollTimeoutMilliseconds: CInt = 500
    func run() {
        let allocator = ByteBufferAllocator()
        var scratch = allocator.buffer(capacity: Self.readBufferSize)
        let handOff = PacketHandOff.bounded(isClosed: isClosed)
        var malformedLog = LineRateLimiter()
        while !isClosed() {
            var error: CInt = 0
            switch st_poll_readable(deviceFD, wakeFD, Self.pollTimeoutMilliseconds, &error) {
            case 0:
                continue
            case 1:
                break
            case 2:
                return
            case 3:
                // Read once anyway: the errno says why (EBADFD once the interface is deleted).
                let (_, _, failure) = readAvailable(into: &scratch, allocator: allocator, malformedLog: &malformedLog)
                logger.error("TUN reader stopped: the device reported an error", metadata: ["device": "\(name)", "error": "\(failure ?? "no data")"])
                return
            default:
                if error == EINTR { continue }
                logger.error("TUN reader stopped: poll failed", metadata: ["device": "\(name)", "error": "\(errnoText(error))"])
                return
            }
            let (batch, tally, failure) = readAvailable(into: &scratch, allocator: allocator, malformedLog: &malformedLog)
            record(tally)
            if !batch.isEmpty { route(batch, handOff) }
            if let failure {
                logger.error("TUN reader stopped: read failed", metadata: ["device": "\(name)", "error": "\(failure)"])
                return
            }
        }
    }

    /// Reads packets until none is waiting or the batch is full. A read error
    /// other than "nothing to read" (the interface was deleted, say) ends the reader.
    private func readAvailable(
        into scratch: inout ByteBuffer, allocator: ByteBufferAllocator, malformedLog: inout LineRateLimiter
    ) -> ([TunnelPacket], TUNReadTally, String?) {
        var batch: [TunnelPacket] = []
        var tally = TUNReadTally()
        while batch.count < PacketFlowLimits.maximumBatchSize {
            scratch.clear()
            let count = scratch.withUnsafeMutableWritableBytes { Glibc.read(deviceFD, $0.baseAddress, $0.count) }
            if count > 0 {
                scratch.moveWriterIndex(forwardBy: count)
                let before = batch.count
                if virtioHeader {
                    unpack(&scratch, allocator: allocator, into: &batch, tally: &tally, malformedLog: &malformedLog)
                } else {
                    batch.append(TunnelPacket(bytes: allocator.buffer(bytes: scratch.readableBytesView)))
                }
                tally.packets += batch.count - before
                for packet in batch[before...] { tally.bytes += packet.bytes.readableBytes }
                continue
            }
            if count == 0 { return (batch, tally, "end of file") }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN: return (batch, tally, nil)
            default: return (batch, tally, errnoText(code))
            }
        }
        return (batch, tally, nil)
    }

    /// Reads at least this long hand their buffer over instead of being
    /// copied out of it: a smaller one would keep 64 KiB alive for less.
    static let minimumHandedOver = 16 * 1024

    /// One read of a device with a virtio_net_hdr: its packet, its TCP
    /// super-packet whole, or (one with IPv6 extension headers) the segments
    /// of that. A header that does not fit is dropped and noted. A large
    /// super-packet keeps the read's own buffer, and the reader takes a new one.
    private func unpack(
        _ scratch: inout ByteBuffer, allocator: ByteBufferAllocator, into batch: inout [TunnelPacket], tally: inout TUNReadTally,
        malformedLog: inout LineRateLimiter
    ) {
        var handOver: UInt16?
        let outcome: Result<Void, TUNOffloadError> = scratch.withUnsafeMutableReadableBytes { read in
            let count = read.count
            guard let header = VirtioNetHeader(UnsafeRawBufferPointer(read)) else { return .failure(.truncatedHeader(bytes: count)) }
            let packet = UnsafeMutableRawBufferPointer(rebasing: read[VirtioNetHeader.size...])
            if header.gsoType != VirtioNetHeader.GSOType.none { tally.superPackets += 1 }
            if let segmentSize = Self.prepareWholeSuperPacket(packet, header: header) {
                if packet.count >= Self.minimumHandedOver {
                    handOver = segmentSize
                } else {
                    var bytes = allocator.buffer(capacity: packet.count)
                    bytes.writeBytes(UnsafeRawBufferPointer(packet))
                    batch.append(TunnelPacket(bytes: bytes, segmentSize: segmentSize))
                }
                return .success(())
            }
            do throws(TUNOffloadError) {
                var segments: [ByteBuffer] = []
                try TCPSegmentation.split(UnsafeRawBufferPointer(packet), header: header, allocator: allocator, into: &segments)
                batch.append(contentsOf: segments.map { TunnelPacket(bytes: $0) })
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if let segmentSize = handOver, let bytes = scratch.getSlice(at: scratch.readerIndex + VirtioNetHeader.size, length: scratch.readableBytes - VirtioNetHeader.size) {
            batch.append(TunnelPacket(bytes: bytes, segmentSize: segmentSize))
            scratch = allocator.buffer(capacity: Self.readBufferSize)
        }
        if case .failure(let error) = outcome {
            tally.malformed += 1
            if let suppressed = malformedLog.admit() {
                logger.warning("TUN read dropped", metadata: ["device": "\(name)", "reason": "\(error)", "suppressed": "\(suppressed)"])
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
