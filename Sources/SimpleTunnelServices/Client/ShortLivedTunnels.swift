import NIOCore

/// Counts tunnels lost soon after they came up, so that reconnection backs
/// off across them instead of starting from its shortest wait each time.
/// Two clients with one certificate or login take the server's session from
/// each other: without this they would flap about once a second for ever.
public struct ShortLivedTunnels: Sendable, Equatable {
    /// A tunnel lost before this long is short-lived.
    public var threshold: TimeAmount = .seconds(60)
    /// Short-lived tunnels in a row; a tunnel that lived longer resets it.
    public private(set) var inARow = 0
    /// From this many in a row on, the client says what it suspects.
    public static let suspicious = 3

    public init() {}

    /// Records a lost tunnel that was up for `lifetime`; returns `inARow`.
    @discardableResult
    public mutating func tunnelLost(after lifetime: TimeAmount) -> Int {
        inARow = lifetime < threshold ? inARow + 1 : 0
        return inARow
    }

    /// What to tell the user once the losses look like a fight over one identity.
    public var warning: String? {
        guard inARow >= Self.suspicious else { return nil }
        return "the tunnel was lost \(inARow) times in a row within \(threshold.nanoseconds / 1_000_000_000) s of coming up: "
            + "another client with the same certificate or login may be taking this one's session on the server "
            + "(give each device its own); waiting longer between attempts"
    }
}
