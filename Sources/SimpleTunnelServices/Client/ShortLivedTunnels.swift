import NIOCore

/// Counts tunnels lost soon after they came up, so that reconnection backs
/// off across them instead of starting from its shortest wait each time.
/// Two clients with one certificate or login take the server's session from
/// each other: without this they would flap about once a second for ever.
///
/// What the user is told depends on how the reconnections went. In a fight
/// over one identity the server is up, so every reconnection succeeds at its
/// first attempt; a server restarting or failing over is away for a moment,
/// so some attempt fails first.
public struct ShortLivedTunnels: Sendable, Equatable {
    /// A tunnel lost before this long is short-lived.
    public var threshold: TimeAmount = .seconds(60)
    /// Short-lived tunnels in a row; a tunnel that lived longer resets it.
    public private(set) var inARow = 0
    /// Whether a reconnection in this streak needed more than one attempt.
    public private(set) var serverWasAway = false
    /// From this many in a row on, the client says what it suspects.
    public static let suspicious = 3

    public init() {}

    /// Records a lost tunnel that was up for `lifetime`; returns `inARow`.
    @discardableResult
    public mutating func tunnelLost(after lifetime: TimeAmount) -> Int {
        if lifetime < threshold {
            inARow += 1
        } else {
            inARow = 0
            serverWasAway = false
        }
        return inARow
    }

    /// Records how many attempts the reconnection after the last loss took.
    public mutating func reconnected(attempts: Int) {
        if attempts > 1 { serverWasAway = true }
    }

    /// What to tell the user once the losses look like a pattern.
    public var warning: String? {
        guard inARow >= Self.suspicious else { return nil }
        let seconds = threshold.nanoseconds / 1_000_000_000
        guard serverWasAway else {
            return "the tunnel was lost \(inARow) times in a row within \(seconds) s of coming up, and each time the server took it back at once: "
                + "another client with the same certificate or login is most likely taking this one's session "
                + "(give each device its own); waiting longer between attempts"
        }
        return "the tunnel was lost \(inARow) times in a row within \(seconds) s of coming up, and the server did not always answer at once: "
            + "it (or the servers behind a load balancer) may be restarting or failing over; waiting longer between attempts"
    }
}
