import NIOCore

/// Which way flows' payload went, as the multiplexer counts it.
public enum TunnelTrafficDirection: Sendable, Hashable {
    /// Written to the tunnel for the peer.
    case toPeer
    /// Read from the tunnel, from the peer.
    case fromPeer
}

/// Told of every flow payload the tunnel carries (app-layer data and IP
/// packets alike), by whoever counts and limits it (the server's per-login
/// traffic). Its answer is how long that direction must wait: the multiplexer
/// then gives no flow a turn, or does not read the peer, until it has passed,
/// so flows fill their queues and stop reading their sockets rather than lose
/// bytes, and the schedule still decides whose turn comes next.
/// Called on the tunnel's event loop.
public protocol TunnelTrafficMeter: AnyObject {
    func count(_ bytes: Int, _ direction: TunnelTrafficDirection, now: NIODeadline) -> TimeAmount?
}

/// The timers of a meter's holds: while one is set, that direction waits.
struct TrafficHolds {
    var sending: Scheduled<Void>?
    var reading: Scheduled<Void>?

    mutating func cancel() {
        sending?.cancel()
        reading?.cancel()
        sending = nil
        reading = nil
    }
}
