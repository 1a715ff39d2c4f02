import NIOCore

/// First in the pipeline of a connection from a listed balancer
/// (`--proxy-protocol-from`): reads its PROXY v2 header, then hands the
/// client's address to `serve`, which builds the rest of the pipeline behind
/// this handler, passes on what followed the header, and leaves. Until then
/// nothing else is set up, and a deadline bounds the wait: a balancer
/// connection that stays silent or sends no valid header is closed and counted.
final class ProxyHeaderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Sets up the connection for the client at this address; false when it was refused (and closed).
    typealias Serve = (_ client: SocketAddress?, _ context: ChannelHandlerContext) throws -> Bool

    private let balancer: SocketAddress?
    private let timeout: TimeAmount
    private let admission: ConnectionAdmission
    private let serve: Serve
    private var buffered: ByteBuffer?
    private var timer: Scheduled<Void>?
    private var done = false

    init(balancer: SocketAddress?, timeout: TimeAmount, admission: ConnectionAdmission, serve: @escaping Serve) {
        self.balancer = balancer
        self.timeout = timeout
        self.admission = admission
        self.serve = serve
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            refuse(context: context, detail: "no PROXY header in time")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if var held = buffered {
            held.writeBuffer(&bytes)
            bytes = held
        }
        switch ProxyHeaderDecoder.decode(bytes.readableBytesView) {
        case .needMoreData:
            buffered = bytes
        case .invalid(let problem):
            refuse(context: context, detail: problem.description)
        case .header(let header, let length):
            done = true
            timer?.cancel()
            buffered = nil
            bytes.moveReaderIndex(forwardBy: length)
            do {
                guard try serve(Self.client(header, balancer: balancer), context) else { return }
            } catch {
                context.fireErrorCaught(error)
                context.close(promise: nil)
                return
            }
            if bytes.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(bytes))
                context.fireChannelReadComplete()
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    /// Who the connection is for: the header's client, or the balancer itself for LOCAL.
    static func client(_ header: ProxyHeader, balancer: SocketAddress?) -> SocketAddress? {
        guard case .proxied(let source, let port, _, _) = header else { return balancer }
        return try? SocketAddress(ipAddress: source.unmapped.description, port: Int(port))
    }

    private func refuse(context: ChannelHandlerContext, detail: String) {
        guard !done else { return }
        done = true
        admission.refused(.proxyHeader, address: balancer.flatMap(IPAddress.init), detail: detail)
        context.close(promise: nil)
    }
}
