import NIOCore

/// Whether the other end of a tunnel is still there, decided without I/O.
///
/// A client probes with `fetchConfiguration`, which our server and Apple's
/// 2016 `tunnel_server` answer, and measures the round trip; an unanswered probe
/// means the peer is dead. A server closes a tunnel it has heard nothing
/// from for its idle timeout (our clients probe well within it), but only
/// while the tunnel holds no flow: Apple's clients never probe, and a quiet
/// flow (an idle SSH session) is still alive. A dead peer of a tunnel with
/// flows is found by the tunnel socket's keepalive and TCP_USER_TIMEOUT.
public struct LivenessMonitor: Sendable {
    public struct Policy: Sendable, Hashable {
        /// Client: how often to probe; nil = never.
        public var probeInterval: TimeAmount?
        /// Client: how long a probe may go unanswered.
        public var probeTimeout: TimeAmount
        /// Server: how long a peer with no flow may stay silent; nil = forever.
        public var idleTimeout: TimeAmount?

        public init(probeInterval: TimeAmount? = nil, probeTimeout: TimeAmount = .seconds(45), idleTimeout: TimeAmount? = nil) {
            self.probeInterval = probeInterval
            self.probeTimeout = probeTimeout
            self.idleTimeout = idleTimeout
        }

        public static let client = Policy(probeInterval: .seconds(15), probeTimeout: .seconds(45))
        public static let server = Policy(idleTimeout: .seconds(900))

        /// How often to look: a quarter of the shortest period.
        var checkInterval: TimeAmount? {
            let periods = [probeInterval, idleTimeout, probeInterval.map { _ in probeTimeout }].compactMap { $0 }
            return periods.min().map { .nanoseconds(max($0.nanoseconds / 4, TimeAmount.milliseconds(20).nanoseconds)) }
        }
    }

    public enum Decision: Equatable {
        case nothing
        case sendProbe
        case peerDead(String)
    }

    public let policy: Policy
    private var lastHeard: NIODeadline
    private var probeSentAt: NIODeadline?
    private var lastProbe: NIODeadline
    /// The last probe's round trip.
    public private(set) var roundTrip: TimeAmount?

    public init(policy: Policy, now: NIODeadline) {
        self.policy = policy
        self.lastHeard = now
        self.lastProbe = now
    }

    /// Any message from the peer.
    public mutating func heard(at now: NIODeadline) {
        lastHeard = now
    }

    public mutating func probeAnswered(at now: NIODeadline) {
        if let sent = probeSentAt {
            roundTrip = now - sent
        }
        probeSentAt = nil
        lastHeard = now
    }

    /// - Parameter holdsFlows: whether the tunnel has a flow now; silence
    ///   counts only from when it has none.
    public mutating func tick(at now: NIODeadline, holdsFlows: Bool = false) -> Decision {
        if holdsFlows {
            lastHeard = max(lastHeard, now)
        } else if let idleTimeout = policy.idleTimeout, now - lastHeard > idleTimeout {
            return .peerDead("nothing heard from a peer with no flow for \(idleTimeout)")
        }
        if let sent = probeSentAt {
            if now - sent > policy.probeTimeout {
                return .peerDead("no answer to a keepalive probe for \(policy.probeTimeout)")
            }
            return .nothing
        }
        if let interval = policy.probeInterval, now - lastProbe >= interval {
            lastProbe = now
            probeSentAt = now
            return .sendProbe
        }
        return .nothing
    }
}
