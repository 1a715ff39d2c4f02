import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// What one batch of reads read.
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

/// How a TUN device's reads become packets, whoever waits for them (the
/// reader thread, `TUNReaderLoop`, or an event loop, `TUNLoopReader`): one
/// `read()` per packet into a 64 KiB buffer, its virtio_net_hdr unpacked, a
/// TCP super-packet kept whole with its segment size (PROTOCOL.md B8) or
/// split, and at most `PacketFlowLimits.maximumBatchSize` packets per batch.
struct TUNPacketReads: Sendable {
    let deviceFD: CInt
    let name: String
    /// Every read starts with a virtio_net_hdr.
    let virtioHeader: Bool
    let logger: Logger

    /// Larger than any IPv4/IPv6 packet without jumbo options (a TSO super-packet
    /// included) and its virtio_net_hdr, so no MTU truncates a read.
    static let readBufferSize = 65_535 + 40 + VirtioNetHeader.size
    /// Reads at least this long hand their buffer over instead of being
    /// copied out of it: a smaller one would keep 64 KiB alive for less.
    static let minimumHandedOver = 16 * 1024

    /// One batch being read, and what it cost.
    struct Batch {
        var packets: [TunnelPacket] = []
        var tally = TUNReadTally()
        var isFull: Bool { packets.count >= PacketFlowLimits.maximumBatchSize }
    }

    /// Reads packets into `batch` until none is waiting or the batch is full.
    /// A read error other than "nothing to read" (the interface was deleted,
    /// say) is returned: it ends the reader.
    func readAvailable(
        into batch: inout Batch, scratch: inout ByteBuffer, allocator: ByteBufferAllocator, malformedLog: inout LineRateLimiter
    ) -> String? {
        while !batch.isFull {
            scratch.clear()
            let count = scratch.withUnsafeMutableWritableBytes { Glibc.read(deviceFD, $0.baseAddress, $0.count) }
            if count > 0 {
                scratch.moveWriterIndex(forwardBy: count)
                if take(&scratch, allocator: allocator, into: &batch, malformedLog: &malformedLog) {
                    scratch = allocator.buffer(capacity: Self.readBufferSize)
                }
                continue
            }
            if count == 0 { return "end of file" }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN: return nil
            default: return errnoText(code)
            }
        }
        return nil
    }

    /// Adds one read's packet (or its segments) to `batch`. True when the
    /// batch keeps `read`'s storage (a large super-packet, uncopied): the
    /// caller must not reuse that buffer.
    func take(_ read: inout ByteBuffer, allocator: ByteBufferAllocator, into batch: inout Batch, malformedLog: inout LineRateLimiter) -> Bool {
        let before = batch.packets.count
        var handedOver = false
        if virtioHeader {
            handedOver = unpack(&read, allocator: allocator, into: &batch, malformedLog: &malformedLog)
        } else {
            batch.packets.append(TunnelPacket(bytes: allocator.buffer(bytes: read.readableBytesView)))
        }
        batch.tally.packets += batch.packets.count - before
        for packet in batch.packets[before...] { batch.tally.bytes += packet.bytes.readableBytes }
        return handedOver
    }

    /// One read of a device with a virtio_net_hdr: its packet, its TCP
    /// super-packet whole, or (one with IPv6 extension headers) the segments
    /// of that. A header that does not fit is dropped and noted.
    private func unpack(
        _ read: inout ByteBuffer, allocator: ByteBufferAllocator, into batch: inout Batch, malformedLog: inout LineRateLimiter
    ) -> Bool {
        var handOver: UInt16?
        let outcome: Result<Void, TUNOffloadError> = read.withUnsafeMutableReadableBytes { bytes in
            let count = bytes.count
            guard let header = VirtioNetHeader(UnsafeRawBufferPointer(bytes)) else { return .failure(.truncatedHeader(bytes: count)) }
            let packet = UnsafeMutableRawBufferPointer(rebasing: bytes[VirtioNetHeader.size...])
            if header.gsoType != VirtioNetHeader.GSOType.none { batch.tally.superPackets += 1 }
            if let segmentSize = Self.prepareWholeSuperPacket(packet, header: header) {
                if packet.count >= Self.minimumHandedOver {
                    handOver = segmentSize
                } else {
                    var copy = allocator.buffer(capacity: packet.count)
                    copy.writeBytes(UnsafeRawBufferPointer(packet))
                    batch.packets.append(TunnelPacket(bytes: copy, segmentSize: segmentSize))
                }
                return .success(())
            }
            do throws(TUNOffloadError) {
                var segments: [ByteBuffer] = []
                try TCPSegmentation.split(UnsafeRawBufferPointer(packet), header: header, allocator: allocator, into: &segments)
                batch.packets.append(contentsOf: segments.map { TunnelPacket(bytes: $0) })
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = outcome {
            batch.tally.malformed += 1
            if let suppressed = malformedLog.admit() {
                logger.warning("TUN read dropped", metadata: ["device": "\(name)", "reason": "\(error)", "suppressed": "\(suppressed)"])
            }
        }
        guard let segmentSize = handOver,
            let bytes = read.getSlice(at: read.readerIndex + VirtioNetHeader.size, length: read.readableBytes - VirtioNetHeader.size)
        else { return false }
        batch.packets.append(TunnelPacket(bytes: bytes, segmentSize: segmentSize))
        return true
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
