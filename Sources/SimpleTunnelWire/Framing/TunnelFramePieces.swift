import NIOCore

/// One frame as buffers to write in order: `head`, then (for a large
/// payload) `payload` and `tail`. The payload is the message's own buffer,
/// not a copy; the bytes are exactly those of `TunnelFrame.encode`.
public struct TunnelFramePieces {
    public var head: ByteBuffer
    public var payload: ByteBuffer?
    public var tail: ByteBuffer?

    /// All pieces in one buffer (tests and diagnostics).
    public var joined: ByteBuffer {
        var frame = head
        if var payload { frame.writeBuffer(&payload) }
        if var tail { frame.writeBuffer(&tail) }
        return frame
    }
}

extension TunnelFrame {
    /// Payloads at least this large are sent beside the frame instead of
    /// copied into it; below, a copy costs less than extra writes.
    public static let minimumDetachedPayload = 2048

    /// `message` as one frame in pieces; fails, like `encode`, when the frame
    /// would exceed the protocol's maximum.
    public static func encodePieces(
        _ message: TunnelMessage, allocator: ByteBufferAllocator
    ) throws(TunnelFrameError) -> TunnelFramePieces {
        // The writer detaches the first large enough `data` object it meets: a
        // `data` message's payload, or a super-packet (PROTOCOL.md B8).
        var detachable = 0
        switch message {
        case .data(_, let payload, _) where payload.readableBytes >= minimumDetachedPayload:
            detachable = payload.readableBytes
        case .packets(_, let packets):
            detachable = packets.first { $0.bytes.readableBytes >= minimumDetachedPayload }?.bytes.readableBytes ?? 0
        default:
            break
        }
        var frame = allocator.buffer(capacity: message.estimatedFrameLength - detachable)
        let detached = try writeFrame(message, into: &frame, detachingDataOf: detachable > 0 ? minimumDetachedPayload : Int.max)
        guard let detached, let head = frame.readSlice(length: detached.offset - frame.readerIndex) else {
            return TunnelFramePieces(head: frame)
        }
        return TunnelFramePieces(head: head, payload: detached.bytes, tail: frame)
    }
}
