import NIOCore

/// Splits the tunnel's byte stream into frame payloads. A length out of range
/// is refused from the header alone, before its payload is buffered, so a
/// peer can never make us hold more than one maximum-size frame.
///
/// Frames that lie whole inside one read go up as slices of it, uncopied.
/// Only a frame split across reads is assembled, in a buffer of exactly its
/// size: each byte is copied at most once (a cumulation buffer, as in NIO's
/// `ByteToMessageHandler`, copies every read again whenever earlier frames
/// are still referenced, which on a bulk flow is always).
public final class TunnelFrameDecoder: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    /// The start of a frame split across reads (header included); empty when
    /// none. A slice of the last read until its header is known, then a buffer
    /// with room for the whole frame. Always mutated in place, never copied.
    private var partial = ByteBuffer()
    /// The length of the frame in `partial`, once it is being assembled.
    private var assemblingLength: Int?
    private var failed = false

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var input = unwrapInboundIn(data)
        do {
            if partial.readableBytes > 0 {
                guard let assembled = try completePartialFrame(from: &input, allocator: context.channel.allocator) else { return }
                context.fireChannelRead(wrapInboundOut(assembled))
            }
            while let payload = try Self.nextPayload(from: &input) {
                context.fireChannelRead(wrapInboundOut(payload))
            }
            if input.readableBytes > 0 {
                partial = input
            }
        } catch {
            failed = true
            partial = ByteBuffer()
            assemblingLength = nil
            context.fireErrorCaught(error)
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            reportTruncation(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        reportTruncation(context: context)
        context.fireChannelInactive()
    }

    /// The stream ended inside a frame.
    private func reportTruncation(context: ChannelHandlerContext) {
        guard partial.readableBytes > 0 else { return }
        let expected = assemblingLength ?? (try? TunnelFrame.frameLength(in: partial)).flatMap { $0 } ?? TunnelWireLimits.lengthPrefixSize
        let received = partial.readableBytes
        partial = ByteBuffer()
        assemblingLength = nil
        context.fireErrorCaught(TunnelWireError.frame(.truncated(expected: expected, received: received)))
    }

    /// Feeds the frame left over from earlier reads; its payload once whole.
    private func completePartialFrame(from input: inout ByteBuffer, allocator: ByteBufferAllocator) throws(TunnelWireError) -> ByteBuffer? {
        let prefix = TunnelWireLimits.lengthPrefixSize
        if assemblingLength == nil {
            if partial.readableBytes < prefix {
                // The header itself is split: gather its 4 bytes first.
                var tail = partial
                partial = allocator.buffer(capacity: prefix)
                partial.writeBuffer(&tail)
                if let rest = input.readSlice(length: min(prefix - partial.readableBytes, input.readableBytes)) {
                    partial.writeImmutableBuffer(rest)
                }
            }
            let length: Int?
            do {
                length = try TunnelFrame.frameLength(in: partial)
            } catch {
                throw .frame(error)
            }
            guard let length else { return nil }
            var tail = partial
            partial = allocator.buffer(capacity: length)
            partial.writeBuffer(&tail)
            assemblingLength = length
        }
        guard let length = assemblingLength else { return nil }
        if let piece = input.readSlice(length: min(length - partial.readableBytes, input.readableBytes)) {
            partial.writeImmutableBuffer(piece)
        }
        guard partial.readableBytes == length else { return nil }
        var frame = partial
        partial = ByteBuffer()
        assemblingLength = nil
        frame.moveReaderIndex(forwardBy: prefix)
        return frame
    }

    /// The next whole frame's payload, consuming it; nil (consuming nothing)
    /// while the frame is incomplete.
    public static func nextPayload(from buffer: inout ByteBuffer) throws(TunnelWireError) -> ByteBuffer? {
        let length: Int?
        do {
            length = try TunnelFrame.frameLength(in: buffer)
        } catch {
            throw .frame(error)
        }
        guard let length, buffer.readableBytes >= length else {
            return nil
        }
        buffer.moveReaderIndex(forwardBy: TunnelWireLimits.lengthPrefixSize)
        return buffer.readSlice(length: length - TunnelWireLimits.lengthPrefixSize)
    }
}

@available(*, unavailable)
extension TunnelFrameDecoder: Sendable {}
