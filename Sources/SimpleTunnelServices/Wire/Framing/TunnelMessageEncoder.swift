import NIOCore

/// Writes each outbound `TunnelMessage` as one frame.
public struct TunnelMessageEncoder: MessageToByteEncoder {
    public typealias OutboundIn = TunnelMessage

    public init() {}

    public func encode(data: TunnelMessage, out: inout ByteBuffer) throws {
        try TunnelFrame.encode(data, into: &out)
    }
}
