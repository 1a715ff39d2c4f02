import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The server's one `AdmissionControl`, shared by every event loop, with
/// what its decisions cause: refusals counted in metrics and logged at most
/// once per interval, however fast a peer makes them.
public final class ConnectionAdmission: Sendable {
    /// Uniform in 0..<100; tests inject their own for deterministic early drops.
    public typealias Roll = @Sendable () -> Int

    private let control: NIOLockedValueBox<AdmissionControl>
    private let log: ThrottledRefusalLog<AdmissionRefusal>
    private let roll: Roll
    private let metrics: TunnelServerMetrics?

    public init(
        limits: AdmissionControl.Limits, roll: @escaping Roll = { Int.random(in: 0..<100) }, logInterval: TimeAmount = .seconds(10),
        metrics: TunnelServerMetrics?, logger: Logger
    ) {
        self.control = NIOLockedValueBox(AdmissionControl(limits: limits))
        self.log = ThrottledRefusalLog("refusing connections", interval: logInterval, logger: logger)
        self.roll = roll
        self.metrics = metrics
    }

    /// New limits for the connections from now on (a reload); those already taken stay.
    func update(limits: AdmissionControl.Limits) {
        control.withLockedValue { $0.limits = limits }
    }

    /// A snapshot, for tests and shutdown.
    public var current: AdmissionControl { control.withLockedValue { $0 } }

    /// Decides about a just-accepted connection; nil when it is refused (and already counted and logged).
    func accept(from peer: SocketAddress?) -> AdmissionTicket? {
        let group = ClientAddressGroup(peer)
        let address = peer.flatMap(IPAddress.init)
        let roll = self.roll()
        let decision = control.withLockedValue { $0.accept(from: group, address: address, roll: roll) }
        if case .refuse(let refusal) = decision {
            refused(refusal, address: address)
            return nil
        }
        metrics?.unauthenticatedConnections.increment()
        return AdmissionTicket(group: group)
    }

    /// The connection sent its first valid message or logged in; false when no tunnel may be added now.
    func promote(_ ticket: AdmissionTicket) -> Bool {
        let decision: AdmissionControl.Decision? = ticket.stage.withLockedValue { stage in
            guard stage == .unauthenticated else { return nil }
            let decision = control.withLockedValue { $0.promote(from: ticket.group) }
            stage = decision == .admit ? .tunnel : .gone
            return decision
        }
        guard let decision else { return false }
        metrics?.unauthenticatedConnections.decrement()
        if case .refuse(let refusal) = decision {
            refused(refusal)
            return false
        }
        return true
    }

    /// The connection closed: gives back whatever it held.
    func release(_ ticket: AdmissionTicket) {
        let was = ticket.stage.withLockedValue { stage in
            defer { stage = .gone }
            switch stage {
            case .unauthenticated: control.withLockedValue { $0.leaveStartups(ticket.group) }
            case .tunnel: control.withLockedValue { $0.tunnelClosed() }
            case .gone: break
            }
            return stage
        }
        if was == .unauthenticated {
            metrics?.unauthenticatedConnections.decrement()
        }
    }

    private var currentMetadata: Logger.Metadata {
        let state = current
        return ["unauthenticated": "\(state.unauthenticated)", "tunnels": "\(state.tunnels)"]
    }

    /// Counts and (rate-limited) logs a connection turned away or cut off before it became a tunnel;
    /// the line names the address when the refusal is about who the peer is (or which balancer failed).
    func refused(_ refusal: AdmissionRefusal, address: IPAddress? = nil, detail: String? = nil) {
        metrics?.admissionRefusal(refusal)
        log.note(refusal, metadata: {
            var metadata = self.currentMetadata
            if [.unlistedAddress, .proxyHeader, .untrustedProxyHeader].contains(refusal) {
                metadata["address"] = "\(address.map { "\($0.unmapped)" } ?? "unknown")"
            }
            if let detail { metadata["detail"] = "\(detail)" }
            return metadata
        }())
    }
}

/// One admitted connection's place: held in the startups, then in the tunnels, then given back.
final class AdmissionTicket: Sendable {
    enum Stage: Sendable, Hashable {
        case unauthenticated, tunnel, gone
    }

    let group: ClientAddressGroup
    let stage = NIOLockedValueBox(Stage.unauthenticated)

    init(group: ClientAddressGroup) {
        self.group = group
    }
}
