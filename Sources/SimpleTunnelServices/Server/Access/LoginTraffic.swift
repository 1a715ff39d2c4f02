import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// Each login's traffic on this server, over all its tunnels: a
/// `BandwidthBucket` each way for a login its groups limit
/// (`Limits.BandwidthMbit`), shared by its tunnels on every event loop.
/// A reload's limits hold at once, for tunnels already open too.
public final class LoginTraffic: Sendable {
    struct Buckets {
        var toClient: BandwidthBucket
        var fromClient: BandwidthBucket
    }

    private struct State {
        /// Mbit/s per limited login, from the rules in force.
        var limits: [String: Double] = [:]
        var buckets: [String: Buckets] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Whether any login is limited: without one (most servers), a message costs no lock.
    private let anyLimited = Atomic<Bool>(false)

    public init(limits: [String: Double] = [:]) {
        setLimits(limits)
    }

    /// The limits of a reload's rules: a login's buckets take its new rate now, or go when it has none.
    public func setLimits(_ limits: [String: Double], now: NIODeadline = .now()) {
        anyLimited.store(!limits.isEmpty, ordering: .relaxed)
        state.withLockedValue { state in
            state.limits = limits
            for (login, var buckets) in state.buckets {
                guard let mbit = limits[login] else {
                    state.buckets[login] = nil
                    continue
                }
                buckets.toClient.setRate(bytesPerSecond: mbit * 125_000, now: now)
                buckets.fromClient.setRate(bytesPerSecond: mbit * 125_000, now: now)
                state.buckets[login] = buckets
            }
        }
    }

    /// `bytes` of `login`'s went `direction` (seen from the tunnel's server end); how long that direction must wait.
    func count(_ bytes: Int, _ direction: TunnelTrafficDirection, login: String, now: NIODeadline) -> TimeAmount? {
        guard anyLimited.load(ordering: .relaxed) else { return nil }
        return state.withLockedValue { state in
            guard let mbit = state.limits[login] else { return nil }
            var buckets =
                state.buckets[login]
                ?? Buckets(toClient: BandwidthBucket(megabitsPerSecond: mbit), fromClient: BandwidthBucket(megabitsPerSecond: mbit))
            let wait: TimeAmount?
            switch direction {
            case .toPeer: wait = buckets.toClient.charge(bytes, now: now)
            case .fromPeer: wait = buckets.fromClient.charge(bytes, now: now)
            }
            state.buckets[login] = buckets
            return wait
        }
    }
}

/// One server tunnel's meter: its payload counted against its login's traffic, once it has logged in.
final class LoginTrafficMeter: TunnelTrafficMeter {
    let traffic: LoginTraffic
    let peer: TunnelPeer

    init(traffic: LoginTraffic, peer: TunnelPeer) {
        self.traffic = traffic
        self.peer = peer
    }

    func count(_ bytes: Int, _ direction: TunnelTrafficDirection, now: NIODeadline) -> TimeAmount? {
        guard let login = peer.currentLogin else { return nil }
        return traffic.count(bytes, direction, login: login, now: now)
    }
}
