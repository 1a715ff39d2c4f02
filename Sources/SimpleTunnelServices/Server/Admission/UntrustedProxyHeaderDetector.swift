import NIOCore

/// On a server that takes PROXY headers from its balancers, first in the
/// pipeline of a connection from any other address: one that starts with a
/// PROXY header is a balancer not listed in `--proxy-protocol-from` (or a
/// peer pretending to be one) and is closed at its first read, counted.
/// Anything else passes on as if this handler were not there.
final class UntrustedProxyHeaderDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let admission: ConnectionAdmission

    init(admission: ConnectionAdmission) {
        self.admission = admission
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        // The signature's first bytes suffice: neither a TLS record (0x16) nor a frame (a length under 128 KiB) starts with "\r\n".
        if let head = bytes.getBytes(at: bytes.readerIndex, length: min(bytes.readableBytes, 4)), !head.isEmpty,
            head.elementsEqual(ProxyHeaderDecoder.signature.prefix(head.count))
        {
            admission.refused(
                .untrustedProxyHeader, address: context.channel.remoteAddress.flatMap(IPAddress.init),
                detail: "a PROXY header from an address not in --proxy-protocol-from")
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
