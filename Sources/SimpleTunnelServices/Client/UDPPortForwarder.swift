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
        var made: UDPSourceFlow?
        multiplexer.openFlow(.udp) { [destination, channel = context.channel] reporter in
            let flow = UDPSourceFlow(reporter: reporter, source: source, destination: destination, channel: channel) { [weak self] in
                self?.flows[source] = nil
            }
            made = flow
            return .udp(flow)
        } completion: { [logger, destination] result in
            if case .failure(let failure) = result {
                logger.notice("UDP flow refused", metadata: ["source": "\(TunnelEndpoint(source))", "destination": "\(destination)", "reason": "\(failure)"])
            }
        }
        guard let flow = made else { return }
        flows[source] = flow
        flow.received(envelope.data)
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

/// One local source's UDP flow. One socket serves every source, so a flow
/// that must not read (not open yet, or its queue full) keeps a few datagrams
/// until it may, and drops the rest, as a network would.
final class UDPSourceFlow: DataFlowEndpoint {
    let source: SocketAddress
    let destination: TunnelEndpoint
    private let reporter: FlowReporter
    private let channel: Channel
    private let onClose: () -> Void
    private var reading = false
    private var waiting: [ByteBuffer] = []
    private var closed = false

    /// Datagrams kept while the flow may not read.
    static let maximumWaiting = 64

    init(reporter: FlowReporter, source: SocketAddress, destination: TunnelEndpoint, channel: Channel, onClose: @escaping () -> Void) {
        self.reporter = reporter
        self.source = source
        self.destination = destination
        self.channel = channel
        self.onClose = onClose
    }

    func received(_ datagram: ByteBuffer) {
        guard !closed else { return }
        if reading {
            reporter.didRead(datagram, from: destination)
        } else if waiting.count < Self.maximumWaiting {
            waiting.append(datagram)
        }
    }

    func setReading(_ enabled: Bool) {
        reading = enabled
        // What waited goes first, in order, for as long as the flow may read.
        while reading, !closed, !waiting.isEmpty {
            reporter.didRead(waiting.removeFirst(), from: destination)
        }
    }

    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        channel.write(AddressedEnvelope(remoteAddress: source, data: data), promise: nil)
    }

    func flush() {
        channel.flush()
    }

    func close() {
        guard !closed else { return }
        closed = true
        waiting.removeAll()
        onClose()
    }
}
