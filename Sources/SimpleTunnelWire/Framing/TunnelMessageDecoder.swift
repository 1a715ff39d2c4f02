import NIOCore

/// What the message decoder passes up the pipeline: a message, or a message
/// that could not be used but does not end the tunnel, for the tunnel handler
/// to answer, drop or ignore as its `disposition` says.
public enum TunnelInboundMessage: Sendable, Hashable {
    case message(TunnelMessage)
    case rejected(TunnelMessageDecodingError)
}

/// Turns frame payloads into messages. Faults that end the tunnel are fired
/// as `TunnelWireError` (the tunnel handler logs them and closes); frames
/// after such a fault are discarded.
public final class TunnelMessageDecoder: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = TunnelInboundMessage

    private var failed = false

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let payload = Self.unwrapInboundIn(data)
        do {
            let message = try TunnelFrame.decodeMessage(payload: payload)
            context.fireChannelRead(Self.wrapInboundOut(.message(message)))
        } catch {
            if case .message(let messageError) = error, messageError.disposition != .closeTunnel {
                context.fireChannelRead(Self.wrapInboundOut(.rejected(messageError)))
            } else {
                failed = true
                context.fireErrorCaught(error)
            }
        }
    }
}

extension ChannelPipeline.SynchronousOperations {
    /// Adds the frame and message codecs: bytes in, `TunnelInboundMessage` out;
    /// `TunnelMessage` in, frames out.
    public func addTunnelMessageCodec() throws {
        try addHandler(TunnelFrameDecoder())
        try addHandler(TunnelFrameEncoder())
        try addHandler(TunnelMessageDecoder())
    }
}
