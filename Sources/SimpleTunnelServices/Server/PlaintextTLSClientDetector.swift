import NIOCore

/// On a `--plaintext` server, a client that starts a TLS handshake is closed
/// at once, with a reason the server's throttled log shows: read as a frame,
/// its ClientHello would claim 66 KB and wait out the first-message timeout,
/// and the client would learn nothing. Leaves the pipeline after the first read.
final class PlaintextTLSClientDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if Self.isTLSClientHello(unwrapInboundIn(data)) {
            context.fireErrorCaught(TLSClientOnPlaintextServer())
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// A TLS handshake record (0x16, version 0x03xx) holding a ClientHello (type 1 at byte 5).
    /// A frame never looks like that: its payload starts with "bplist00" or "<" at byte 4.
    static func isTLSClientHello(_ bytes: ByteBuffer) -> Bool {
        guard let head = bytes.getBytes(at: bytes.readerIndex, length: 6) else { return false }
        return head[0] == 0x16 && head[1] == 0x03 && head[5] == 0x01
    }
}

/// Why a connection to a `--plaintext` server was closed before its first message.
struct TLSClientOnPlaintextServer: Error, CustomStringConvertible {
    var description: String {
        "the client started a TLS handshake, but this server runs with --plaintext: give the client --plaintext too, or start the server without it"
    }
}
