import CoreMetrics

/// What the server counts, through swift-metrics: the executable decides the
/// backend (Prometheus with `--metrics`); the library only records.
public struct TunnelServerMetrics: Sendable {
    let tunnels: Meter
    let tunnelsOpened: Counter
    let bytesFromClients: Counter
    let bytesToClients: Counter
    let authenticationFailures: Counter
    /// Logins neither accepted nor refused: the logins' store (the database) could not be asked.
    let loginsUnavailable: Counter
    /// Messages from clients that could not be acted on (PROTOCOL.md B5).
    let malformedMessages: Counter
    /// Flow events only our own mistake could cause (a release build closes the flow and counts it).
    let impossibleEvents: Counter
    let leases: Meter
    private let flows: [TunnelFlowKind: Meter]
    private let openResults: [TunnelConnectionOpenResult: Counter]
    private let droppedPackets: [DroppedPacketReason: Counter]
    /// Connections accepted that have not yet finished TLS and login.
    let unauthenticatedConnections: Meter
    private let admissionRefusals: [AdmissionRefusal: Counter]
    private let logins: [LoginOutcome: Counter]
    /// Set (`--metrics-per-login`): bytes are also counted by login, one series per login.
    private let perLogin: MetricsFactory?

    enum DroppedPacketReason: String, CaseIterable {
        case spoofed, notIPv4 = "not_ipv4", unroutable, congested
        /// A client's packet to a destination the policy refuses.
        case policy
        /// A client's packet that stays on the tunnel's link: IPv6 from or to a
        /// link-local or multicast address, IPv4 to multicast, broadcast or link-local.
        case linkScoped = "link_scoped"
        /// A client's packet whose port could not be found, to a destination a port rule covers.
        case undeterminablePort = "undeterminable_port"
        case clientIsolation = "client_isolation"
        /// A super-packet from a client that did not agree to them (PROTOCOL.md B8).
        case superPacket = "super_packet"
        /// A super-packet from the server's device that could not be cut for a client that takes none.
        case uncutSuperPacket = "uncut_super_packet"
    }

    public init(factory: MetricsFactory = MetricsSystem.factory, perLogin: Bool = false) {
        self.perLogin = perLogin ? factory : nil
        tunnels = Meter(label: "simpletunnel_tunnels", factory: factory)
        tunnelsOpened = Counter(label: "simpletunnel_tunnels_total", factory: factory)
        bytesFromClients = Counter(label: "simpletunnel_bytes_total", dimensions: [("direction", "from_clients")], factory: factory)
        bytesToClients = Counter(label: "simpletunnel_bytes_total", dimensions: [("direction", "to_clients")], factory: factory)
        authenticationFailures = Counter(label: "simpletunnel_authentication_failures_total", factory: factory)
        loginsUnavailable = Counter(label: "simpletunnel_logins_unavailable_total", factory: factory)
        malformedMessages = Counter(label: "simpletunnel_malformed_messages_total", factory: factory)
        impossibleEvents = Counter(label: "simpletunnel_impossible_events_total", factory: factory)
        leases = Meter(label: "simpletunnel_leases", factory: factory)
        flows = [
            .tcp: Meter(label: "simpletunnel_flows", dimensions: [("kind", "tcp")], factory: factory),
            .udp: Meter(label: "simpletunnel_flows", dimensions: [("kind", "udp")], factory: factory),
            .ip: Meter(label: "simpletunnel_flows", dimensions: [("kind", "ip")], factory: factory),
        ]
        var openResults: [TunnelConnectionOpenResult: Counter] = [:]
        for result in TunnelConnectionOpenResult.allCases {
            openResults[result] = Counter(label: "simpletunnel_open_results_total", dimensions: [("result", "\(result)")], factory: factory)
        }
        self.openResults = openResults
        var dropped: [DroppedPacketReason: Counter] = [:]
        for reason in DroppedPacketReason.allCases {
            dropped[reason] = Counter(label: "simpletunnel_dropped_packets_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        self.droppedPackets = dropped
        unauthenticatedConnections = Meter(label: "simpletunnel_unauthenticated_connections", factory: factory)
        var refusals: [AdmissionRefusal: Counter] = [:]
        for reason in AdmissionRefusal.allCases {
            refusals[reason] = Counter(label: "simpletunnel_admission_refusals_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        self.admissionRefusals = refusals
        var logins: [LoginOutcome: Counter] = [:]
        for outcome in LoginOutcome.allCases {
            logins[outcome] = Counter(label: "simpletunnel_logins_total", dimensions: [("outcome", outcome.rawValue)], factory: factory)
        }
        self.logins = logins
    }

    public func flowOpened(_ kind: TunnelFlowKind) { flows[kind]?.increment() }
    public func flowClosed(_ kind: TunnelFlowKind) { flows[kind]?.decrement() }
    public func openResult(_ result: TunnelConnectionOpenResult) { openResults[result]?.increment() }
    func admissionRefusal(_ reason: AdmissionRefusal) { admissionRefusals[reason]?.increment() }
    func login(_ outcome: LoginOutcome) { logins[outcome]?.increment() }
    func droppedPackets(_ reason: DroppedPacketReason, count: Int) {
        guard count > 0 else { return }
        droppedPackets[reason]?.increment(by: count)
    }
}

extension TunnelServerMetrics {
    /// Usage handed to its store, by login, when asked for (`--metrics-per-login`).
    func countUsage(_ records: [UsageRecord]) {
        guard let factory = perLogin else { return }
        for record in records {
            let login = record.login  // the exporter escapes label values
            Counter(label: "simpletunnel_login_bytes_total", dimensions: [("login", login), ("direction", "from_client")], factory: factory)
                .increment(by: Int64(clamping: record.usage.bytesFromClient))
            Counter(label: "simpletunnel_login_bytes_total", dimensions: [("login", login), ("direction", "to_client")], factory: factory)
                .increment(by: Int64(clamping: record.usage.bytesToClient))
        }
    }
}
