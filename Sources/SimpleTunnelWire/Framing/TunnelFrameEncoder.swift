import NIOCore

/// Writes each outbound `TunnelMessage` as one frame, a large payload as its
/// own buffer between the frame's head and tail (`TunnelFramePieces`): the
/// payload is not copied, and `TLSHandler` packs the pieces into full records.
/// The write's promise completes with the frame's last piece.
public final class TunnelFrameEncoder: ChannelOutboundHandler {
    public typealias OutboundIn = TunnelMessage
    public typealias OutboundOut = ByteBuffer

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let pieces: TunnelFramePieces
        do {
            pieces = try TunnelFrame.encodePieces(unwrapOutboundIn(data), allocator: context.channel.allocator)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(error)
            return
        }
        guard let payload = pieces.payload, let tail = pieces.tail else {
            context.write(wrapOutboundOut(pieces.head), promise: promise)
            return
        }
        context.write(wrapOutboundOut(pieces.head), promise: nil)
        context.write(wrapOutboundOut(payload), promise: nil)
        context.write(wrapOutboundOut(tail), promise: promise)
    }
}

@available(*, unavailable)
extension TunnelFrameEncoder: Sendable {}
