import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The server's IP layer: its address pool, the router in front of its TUN
/// device, and the configuration each lease is answered with (PROTOCOL.md A4, A5).
public final class ServerIPLayer: Sendable {
    public let pool: any AddressLeasing
    public let router: PacketRouter
    /// What each new lease is answered with; a reload replaces it (the pool stays).
    private let currentConfiguration: NIOLockedValueBox<TunnelServerConfiguration>
    let metrics: TunnelServerMetrics?
    /// The tunnel of each lease's holder, so that a newer session of the same client can end it.
    private let holders = NIOLockedValueBox<[LeaseBook.Holder: @Sendable () -> Void]>([:])
    /// The TUN device's own addresses: a split tunnel's client is given host routes to them.
    let serverAddresses: [IPAddress]

    public init(
        pool: any AddressLeasing, router: PacketRouter, configuration: TunnelServerConfiguration, metrics: TunnelServerMetrics? = nil,
        serverAddresses: [IPAddress] = []
    ) {
        self.serverAddresses = serverAddresses
        self.pool = pool
        self.router = router
        self.currentConfiguration = NIOLockedValueBox(configuration)
        self.metrics = metrics
        pool.reserve(configuration.server.access.fixedAddresses)
        pool.whenReplacedElsewhere { [weak self] holder in self?.endSession(holder: holder) }
    }

    /// Routes, DNS and fixed addresses for the leases given from now on, and the packet rules for every lease (a reload).
    public func update(configuration: TunnelServerConfiguration, policy: DestinationPolicy) {
        currentConfiguration.withLockedValue { $0 = configuration }
        router.update(policy: policy)
        pool.reserve(configuration.server.access.fixedAddresses)
    }

    /// Leases an address for an IP flow and attaches it to the router; result 3 when the pool is exhausted,
    /// 5 when the leases cannot be decided now (the shared database is unreachable).
    /// A known client gets its last address back; if an older session of it still holds that address,
    /// that session's tunnel is ended and the address moves to this one at once.
    /// Super-packets are agreed when the client offers them and the device takes them whole.
    /// `pushed`: the routes and DNS of the login's groups, answered instead of the server's.
    func open(
        reporter: FlowReporter, peer: TunnelPeer?, offersSuperPackets: Bool = false, eventLoop: EventLoop, logger: Logger,
        loginFilter: (@Sendable () -> LoginPacketFilter?)? = nil, pushed: AccessProfile.Pushed? = nil,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        let client = peer?.identity
        pool.lease(for: client, on: eventLoop).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .failure(let error):
                completion(.failure(FlowOpenFailure(.internalError, "no address can be leased now: \(error)")))
            case .success(nil):
                completion(.failure(FlowOpenFailure(.refused, "the address pool \(pool.poolDescription) is exhausted")))
            case .success(let lease?):
                if let replaced = lease.replaced {
                    logger.notice("a new session of \(client ?? "the client") takes over \(lease.addressesDescription); ending the old one")
                    endSession(holder: replaced)
                } else {
                    metrics?.leases.increment()
                }
                // Who has which address: the line an operator looks for when a packet's source must be named.
                logger.notice("leased \(lease.addressesDescription)", metadata: ["client": "\(client.map { PeerText.quoted($0) } ?? "anonymous")"])
                let configuration = currentConfiguration.withLockedValue { $0 }
                var answer = (pushed?.applied(to: configuration) ?? configuration).configuration(
                    forLease: lease.address, ipv6: lease.ipv6Address, serverAddresses: serverAddresses)
                let path = router.superPacketPath(peerOffered: offersSuperPackets, answer: &answer)
                let endpoint = ServerIPFlowEndpoint(
                    reporter: reporter, lease: lease, layer: self, eventLoop: eventLoop, logger: logger, client: client, peer: peer,
                    path: path, loginFilter: loginFilter)
                if let peer {
                    peer.leased(lease.addressesDescription)
                    holders.withLockedValue { $0[lease.holder] = { peer.close() } }
                }
                completion(.success(OpenedFlow(endpoint: .ip(endpoint), configuration: answer)))
            }
        }
    }

    /// Ends the tunnel of a session another one replaced (here, or on another server through the database).
    func endSession(holder: LeaseBook.Holder) {
        holders.withLockedValue { $0.removeValue(forKey: holder) }?()
    }

    /// Frees a lease its flow no longer needs (unless a newer session took it over).
    func release(_ lease: AddressPool.Lease) {
        holders.withLockedValue { _ = $0.removeValue(forKey: lease.holder) }
        router.detach(lease.address, ipv6: lease.ipv6Address, holder: lease.holder)
        if pool.release(lease) {
            metrics?.leases.decrement()
        }
    }
}

/// The server's end of one client's IP flow: its lease on the router.
final class ServerIPFlowEndpoint: PacketFlowEndpoint {
    private let reporter: FlowReporter
    let lease: AddressPool.Lease
    private let layer: ServerIPLayer
    private let logger: Logger
    private let client: String?
    private var attached = true
    /// Told the address while the flow holds it, for `tunnel-server status`.
    private let peer: TunnelPeer?
    /// Whether super-packets cross this flow whole (PROTOCOL.md B8), decided as it opened.
    private let path: SuperPacketPath
    /// The rules of the client's login's groups now, asked for each batch.
    private let loginFilter: (@Sendable () -> LoginPacketFilter?)?

    init(
        reporter: FlowReporter, lease: AddressPool.Lease, layer: ServerIPLayer, eventLoop: EventLoop,
        logger: Logger, client: String?, peer: TunnelPeer? = nil, path: SuperPacketPath = .segmented,
        loginFilter: (@Sendable () -> LoginPacketFilter?)? = nil
    ) {
        self.reporter = reporter
        self.loginFilter = loginFilter
        self.path = path
        self.peer = peer
        self.lease = lease
        self.layer = layer
        self.logger = logger
        self.client = client
        // Until close() detaches it (or a newer session of the client takes the address), the router holds this endpoint.
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        layer.router.attach(lease.address, ipv6: lease.ipv6Address, holder: lease.holder, eventLoop: eventLoop, path: path) { packets in
            bound.value.deliver(packets)
        }
    }

    private func deliver(_ packets: [TunnelPacket]) {
        // Packets already on their way when the flow closed belong to no flow.
        guard attached else { return }
        reporter.didReadPackets(packets)
    }

    func writePackets(_ packets: [TunnelPacket]) {
        guard attached else { return }
        layer.router.send(packets, from: lease.address, ipv6: lease.ipv6Address, path: path, loginFilter: loginFilter?())
    }

    func close() {
        guard attached else { return }
        attached = false
        peer?.leased(nil)
        layer.release(lease)
        logger.notice("released \(lease.addressesDescription)", metadata: ["client": "\(client.map { PeerText.quoted($0) } ?? "anonymous")"])
    }
}
