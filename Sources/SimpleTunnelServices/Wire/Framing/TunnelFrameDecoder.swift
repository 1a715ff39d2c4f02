import NIOCore

/// Splits the tunnel's byte stream into frame payloads. A length out of range
/// is refused from the header alone, before its payload is buffered, so a
/// peer can never make us hold more than one maximum-size frame.
public struct TunnelFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    public init() {}

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let payload = try Self.nextPayload(from: &buffer) else {
            return .needMoreData
        }
        context.fireChannelRead(Self.wrapInboundOut(payload))
        return .continue
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let expected = (try? TunnelFrame.frameLength(in: buffer)) ?? nil
            let received = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: received)
            throw TunnelWireError.frame(.truncated(expected: expected ?? TunnelWireLimits.lengthPrefixSize, received: received))
        }
        return .needMoreData
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
