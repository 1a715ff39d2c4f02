import Logging
import NIOCore
import NIOPosix

/// `-U`: datagrams arriving on a local UDP port travel through the tunnel to
/// one destination; each local source address gets its own UDP flow, and the
/// answers go back to that source.
public enum UDPPortForwarder {
    public static func start(
        bindHost: String,
        bindPort: Int,
        destination: TunnelEndpoint,
        tunnel: any TunnelMultiplexerProvider,
        logger: Logger
    ) async throws -> LocalListener {
        let channel = try await DatagramBootstrap(group: tunnel.eventLoop).readingWholeDatagrams()
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        UDPForwardHandler(destination: destination, tunnel: tunnel, logger: logger)
                    )
                }
            }
            .bind(host: bindHost, port: bindPort)
            .namingListenAddress(host: bindHost, port: bindPort)
            .get()
        let forwarder = try LocalListener(channel: channel)
        logger.notice("forwarding UDP \(TunnelEndpoint(forwarder.localAddress)) to \(destination) through the tunnel")
        return forwarder
    }
}

/// Maps local source addresses to flows on one UDP socket.
final class UDPForwardHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let destination: TunnelEndpoint
    private let tunnel: any TunnelMultiplexerProvider
    private let logger: Logger
    private var flows: [SocketAddress: UDPSourceFlow] = [:]

    init(destination: TunnelEndpoint, tunnel: any TunnelMultiplexerProvider, logger: Logger) {
        self.destination = destination
        self.tunnel = tunnel
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let source = envelope.remoteAddress
        if let flow = flows[source] {
            flow.received(envelope.data)
            return
        }
        guard let multiplexer = tunnel.currentMultiplexer else {
            // No tunnel while reconnecting: dropped, as a network would.
            return
        }
        let flow = UDPSourceFlow(source: source, destination: destination, channel: context.channel) { [weak self] in
            self?.flows[source] = nil
        }
        flows[source] = flow
        flow.received(envelope.data)
        flow.identifier = multiplexer.openFlow(.udp, endpoint: flow) { [logger, destination] result in
            switch result {
            case .success:
                flow.opened(sink: multiplexer)
            case .failure(let failure):
                logger.notice("UDP flow refused", metadata: ["source": "\(TunnelEndpoint(source))", "destination": "\(destination)", "reason": "\(failure)"])
                flow.close()
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        for flow in flows.values {
            flow.close()
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP errors for one source must not end the others.
    }
}

/// One local source's UDP flow: datagrams wait here until the server opens it.
final class UDPSourceFlow: FlowEndpoint {
    let source: SocketAddress
    let destination: TunnelEndpoint
    var identifier: TunnelConnectionIdentifier?
    private let channel: Channel
    private let onClose: () -> Void
    private weak var sink: FlowEventSink?
    private var waiting: [ByteBuffer] = []
    private var closed = false

    /// Datagrams kept while the flow opens; more are dropped, as a network would.
    static let maximumWaiting = 64

    init(source: SocketAddress, destination: TunnelEndpoint, channel: Channel, onClose: @escaping () -> Void) {
        self.source = source
        self.destination = destination
        self.channel = channel
        self.onClose = onClose
    }

    func received(_ datagram: ByteBuffer) {
        guard !closed else { return }
        if let sink, let identifier {
            sink.flow(identifier, didRead: datagram, from: destination)
        } else if waiting.count < Self.maximumWaiting {
            waiting.append(datagram)
        }
    }

    func opened(sink: FlowEventSink) {
        self.sink = sink
        let datagrams = waiting
        waiting.removeAll()
        for datagram in datagrams {
            received(datagram)
        }
    }

    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        channel.write(AddressedEnvelope(remoteAddress: source, data: data), promise: nil)
    }

    func flush() {
        channel.flush()
    }

    /// One socket serves every source: the kernel drops what overflows.
    func setReading(_ enabled: Bool) {}

    func shutdownOutput() {}

    func close() {
        guard !closed else { return }
        closed = true
        waiting.removeAll()
        onClose()
    }
}
