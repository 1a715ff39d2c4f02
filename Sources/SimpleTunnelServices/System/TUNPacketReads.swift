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
    ///
    /// The read is looked at without writing to it, and a super-packet's
    /// checksum fields are set only where the kernel left other values: a
    /// read NIO's receive pool still references (`TUNLoopReader`'s first)
    /// would be copied whole by any write into it.
    private func unpack(
        _ read: inout ByteBuffer, allocator: ByteBufferAllocator, into batch: inout Batch, malformedLog: inout LineRateLimiter
    ) -> Bool {
        let outcome: Result<WholeSuperPacketFields?, TUNOffloadError> = read.withUnsafeReadableBytes { bytes in
            guard let header = VirtioNetHeader(bytes) else { return .failure(.truncatedHeader(bytes: bytes.count)) }
            let packet = UnsafeRawBufferPointer(rebasing: bytes[VirtioNetHeader.size...])
            if header.gsoType != VirtioNetHeader.GSOType.none { batch.tally.superPackets += 1 }
            if let whole = WholeSuperPacketFields(packet, header: header) { return .success(whole) }
            do throws(TUNOffloadError) {
                var segments: [ByteBuffer] = []
                try TCPSegmentation.split(packet, header: header, allocator: allocator, into: &segments)
                batch.packets.append(contentsOf: segments.map { TunnelPacket(bytes: $0) })
                return .success(nil)
            } catch {
                return .failure(error)
            }
        }
        let whole: WholeSuperPacketFields
        switch outcome {
        case .success(nil):
            return false
        case .success(.some(let fields)):
            whole = fields
        case .failure(let error):
            batch.tally.malformed += 1
            if let suppressed = malformedLog.admit() {
                logger.warning("TUN read dropped", metadata: ["device": "\(name)", "reason": "\(error)", "suppressed": "\(suppressed)"])
            }
            return false
        }
        read.moveReaderIndex(forwardBy: VirtioNetHeader.size)
        whole.store(into: &read)
        guard read.readableBytes >= Self.minimumHandedOver else {
            batch.packets.append(TunnelPacket(bytes: allocator.buffer(buffer: read), segmentSize: whole.segmentSize))
            return false
        }
        batch.packets.append(TunnelPacket(bytes: read, segmentSize: whole.segmentSize))
        return true
    }
}
