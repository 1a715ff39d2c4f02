import Logging
import NIOCore

/// Reads a TUN device on the event loop that owns everything its packets
/// touch (the client's tunnel), so a batch goes from the device to the
/// tunnel without a thread of its own, a hand-off or a wake-up between them.
///
/// The device is watched through a read-only NIO pipe channel on a duplicate
/// of its descriptor. NIO reads one packet per readiness (a TUN read never
/// fills its buffer, which NIO takes for "nothing more"), so this handler reads
/// the rest waiting itself, up to a batch, from that same duplicate: NIO
/// closes it on this loop, when the channel closes, and this handler only
/// runs while the channel is open, so no read here can meet a reused number.
final class TUNLoopReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let reads: TUNPacketReads
    private let deliver: @Sendable ([TunnelPacket]) -> Void
    private let record: @Sendable (TUNReadTally) -> Void
    private let allocator = ByteBufferAllocator()
    private var scratch: ByteBuffer
    private var malformedLog = LineRateLimiter()
    private var stopped = false

    init(reads: TUNPacketReads, deliver: @escaping @Sendable ([TunnelPacket]) -> Void, record: @escaping @Sendable (TUNReadTally) -> Void) {
        self.reads = reads
        self.deliver = deliver
        self.record = record
        self.scratch = allocator.buffer(capacity: TUNPacketReads.readBufferSize)
    }

    /// The channel's reads: whole packets, never truncated.
    static var receiveAllocator: FixedSizeRecvByteBufferAllocator {
        FixedSizeRecvByteBufferAllocator(capacity: TUNPacketReads.readBufferSize)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !stopped else { return }
        var first = unwrapInboundIn(data)
        var batch = TUNPacketReads.Batch()
        _ = reads.take(&first, allocator: allocator, into: &batch, malformedLog: &malformedLog)
        let failure = reads.readAvailable(into: &batch, scratch: &scratch, allocator: allocator, malformedLog: &malformedLog)
        record(batch.tally)
        if !batch.packets.isEmpty { deliver(batch.packets) }
        if let failure { stop(context: context, reason: failure) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        stop(context: context, reason: "\(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopped = true
        context.fireChannelInactive()
    }

    private func stop(context: ChannelHandlerContext, reason: String) {
        guard !stopped else { return }
        stopped = true
        reads.logger.error("TUN reader stopped: read failed", metadata: ["device": "\(reads.name)", "error": "\(reason)"])
        context.close(promise: nil)
    }
}
