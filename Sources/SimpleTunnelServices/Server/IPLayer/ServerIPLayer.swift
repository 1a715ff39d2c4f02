import Logging
import NIOCore

/// The server's IP layer: its address pool, the router in front of its TUN
/// device, and the configuration each lease is answered with (PROTOCOL.md A4, A5).
public final class ServerIPLayer: Sendable {
    public let pool: AddressPool
    public let router: PacketRouter
    private let configuration: TunnelServerConfiguration
    let metrics: TunnelServerMetrics?

    public init(pool: AddressPool, router: PacketRouter, configuration: TunnelServerConfiguration, metrics: TunnelServerMetrics? = nil) {
        self.pool = pool
        self.router = router
        self.configuration = configuration
        self.metrics = metrics
    }

    /// Leases an address for an IP flow and attaches it to the router; result 3 when the pool is exhausted.
    func open(identifier: TunnelConnectionIdentifier, sink: FlowEventSink, eventLoop: EventLoop) -> Result<OpenedFlow, FlowOpenFailure> {
        guard let lease = pool.lease() else {
            return .failure(FlowOpenFailure(.refused, "the address pool \(pool.range.lowerBound)-\(pool.range.upperBound) is exhausted"))
        }
        metrics?.leases.increment()
        let endpoint = ServerIPFlowEndpoint(identifier: identifier, lease: lease, sink: sink, layer: self, eventLoop: eventLoop)
        return .success(OpenedFlow(endpoint: endpoint, configuration: configuration.configuration(forLease: lease)))
    }
}

/// The server's end of one client's IP flow: its lease on the router.
final class ServerIPFlowEndpoint: FlowEndpoint {
    let identifier: TunnelConnectionIdentifier
    let lease: IPv4Address
    private weak var sink: FlowEventSink?
    private let layer: ServerIPLayer
    private var attached = true

    init(identifier: TunnelConnectionIdentifier, lease: IPv4Address, sink: FlowEventSink, layer: ServerIPLayer, eventLoop: EventLoop) {
        self.identifier = identifier
        self.lease = lease
        self.sink = sink
        self.layer = layer
        // Until close() detaches it, the router holds this endpoint.
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        layer.router.attach(lease, eventLoop: eventLoop) { packets in
            bound.value.deliver(packets)
        }
    }

    private func deliver(_ packets: [TunnelPacket]) {
        sink?.flow(identifier, didReadPackets: packets)
    }

    func writePackets(_ packets: [TunnelPacket]) {
        guard attached else { return }
        layer.router.send(packets, from: lease)
    }

    func close() {
        guard attached else { return }
        attached = false
        layer.router.detach(lease)
        layer.pool.release(lease)
        layer.metrics?.leases.decrement()
    }

    // An IP flow carries packets only.
    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {}
    func flush() {}
    func setReading(_ enabled: Bool) {}
    func shutdownOutput() {}
}
