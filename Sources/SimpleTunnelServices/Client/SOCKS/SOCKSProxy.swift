import Logging
import NIOCore
import NIOPosix

/// A SOCKS5 proxy (RFC 1928, no authentication) whose CONNECTs become TCP
/// flows and whose UDP ASSOCIATEs become UDP flows of the tunnel. Names are
/// resolved by the server, as `curl --socks5-hostname` expects.
public enum SOCKSProxy {
    public static func start(bindHost: String, bindPort: Int, tunnel: any TunnelMultiplexerProvider, logger: Logger) async throws -> LocalListener {
        let channel = try await LocalListener.streamBootstrap(on: tunnel.eventLoop).flowListenerOptions()
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try FlowSocketOptions.applyToAccepted(channel)
                    try channel.pipeline.syncOperations.addHandler(
                        SOCKS5ServerHandler(logger: logger) { request, channel in
                            handle(request, on: channel, tunnel: tunnel, logger: logger)
                        }
                    )
                }
            }
            .bind(host: bindHost, port: bindPort)
            .namingListenAddress(host: bindHost, port: bindPort)
            .get()
        let proxy = try LocalListener(channel: channel)
        logger.notice("SOCKS5 proxy on \(TunnelEndpoint(proxy.localAddress)) through the tunnel")
        return proxy
    }

    static func handle(_ request: SOCKS5Request, on channel: Channel, tunnel: any TunnelMultiplexerProvider, logger: Logger) -> EventLoopFuture<SOCKS5Outcome> {
        switch request {
        case .connect(let destination):
            return connect(to: destination, on: channel, tunnel: tunnel, logger: logger)
        case .udpAssociate:
            return associate(on: channel, tunnel: tunnel, logger: logger)
        }
    }

    private static func connect(to destination: TunnelEndpoint, on channel: Channel, tunnel: any TunnelMultiplexerProvider, logger: Logger) -> EventLoopFuture<SOCKS5Outcome> {
        guard let multiplexer = tunnel.currentMultiplexer else {
            logger.notice("SOCKS CONNECT refused: the tunnel is down, reconnecting", metadata: ["destination": "\(destination)"])
            return channel.eventLoop.makeSucceededFuture(.failure(.networkUnreachable))
        }
        let promise = channel.eventLoop.makePromise(of: SOCKS5Outcome.self)
        // Refused at once (no room, or no handler), the completion has answered already.
        multiplexer.openFlow(.tcp(destination)) { reporter in
            let endpoint = StreamFlowEndpoint(reporter: reporter)
            // In place before the reply, so bytes pipelined after the request reach the flow.
            try channel.pipeline.syncOperations.addHandler(endpoint)
            return .tcp(endpoint)
        } completion: { result in
            switch result {
            case .success:
                promise.succeed(.succeeded(boundAddress: channel.localAddress))
            case .failure(let failure):
                logger.notice("SOCKS CONNECT refused", metadata: ["destination": "\(destination)", "reason": "\(failure)"])
                promise.succeed(.failure(failure))
            }
        }
        return promise.futureResult
    }

    private static func associate(on channel: Channel, tunnel: any TunnelMultiplexerProvider, logger: Logger) -> EventLoopFuture<SOCKS5Outcome> {
        guard let local = channel.localAddress?.ipAddress, let client = channel.remoteAddress else {
            return channel.eventLoop.makeSucceededFuture(.failure(.generalFailure))
        }
        // The relay joins the socket once bound, made for its flow; what arrives before is dropped.
        return DatagramBootstrap(group: channel.eventLoop).readingWholeDatagrams()
            .bind(host: local, port: 0)
            .flatMap { udp -> EventLoopFuture<SOCKS5Outcome> in
                let promise = channel.eventLoop.makePromise(of: SOCKS5Outcome.self)
                guard let multiplexer = tunnel.currentMultiplexer else {
                    udp.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(.failure(.networkUnreachable))
                }
                var made: SOCKSUDPRelay?
                multiplexer.openFlow(.udp) { reporter in
                    let relay = SOCKSUDPRelay(reporter: reporter, client: client, logger: logger)
                    try udp.pipeline.syncOperations.addHandler(relay)
                    made = relay
                    return .udp(relay)
                } completion: { result in
                    switch result {
                    case .success:
                        promise.succeed(.succeeded(boundAddress: udp.localAddress))
                    case .failure(let failure):
                        udp.close(promise: nil)
                        promise.succeed(.failure(failure))
                    }
                }
                // The association lives as long as the TCP connection that asked for it.
                if let relay = made {
                    let boundRelay = NIOLoopBound(relay, eventLoop: channel.eventLoop)
                    channel.closeFuture.whenComplete { _ in
                        boundRelay.value.associationEnded()
                    }
                }
                return promise.futureResult
            }
            .recover { _ in .failure(.generalFailure) }
    }
}

/// The UDP side of one SOCKS association: client datagrams (with their SOCKS
/// header) become the flow's data, each naming its destination; answers come
/// back wrapped in a header naming their source. While the flow may not read
/// (not open yet, or its queue full) datagrams are dropped, as a network would.
final class SOCKSUDPRelay: ChannelInboundHandler, DataFlowEndpoint {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let reporter: FlowReporter
    private var reading = false
    /// Only the client that asked for the association may use it.
    private let clientHost: String?
    private var clientAddress: SocketAddress?
    private var context: ChannelHandlerContext?
    private let logger: Logger

    init(reporter: FlowReporter, client: SocketAddress, logger: Logger) {
        self.reporter = reporter
        self.clientHost = client.ipAddress
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.remoteAddress.ipAddress == clientHost, reading else { return }
        do {
            let datagram = try SOCKS5UDPDatagram(parsing: envelope.data)
            clientAddress = envelope.remoteAddress
            reporter.didRead(datagram.payload, from: datagram.endpoint)
        } catch {
            logger.debug("dropping SOCKS datagram", metadata: ["reason": "\(error)"])
        }
    }

    /// ICMP errors (port unreachable) surface here; the association carries on.
    func errorCaught(context: ChannelHandlerContext, error: Error) {}

    func associationEnded() {
        reporter.didClose()
        close()
    }

    // MARK: DataFlowEndpoint

    func write(_ data: ByteBuffer, to source: TunnelEndpoint?) {
        guard let context, let clientAddress, let source,
            let wrapped = try? SOCKS5UDPDatagram(endpoint: source, payload: data).encoded(allocator: context.channel.allocator)
        else { return }
        context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: clientAddress, data: wrapped)), promise: nil)
    }

    func flush() {
        context?.flush()
    }

    func setReading(_ enabled: Bool) {
        reading = enabled
    }

    func close() {
        context?.close(promise: nil)
    }
}
