import NIOCore

/// How long a client waits before each attempt to bring a lost tunnel back:
/// doubling from `initial` up to `maximum`, each wait picked at random in its
/// upper half, so that clients cut off together do not all return at once.
public struct ReconnectBackoff: Sendable, Equatable {
    public var initial: TimeAmount = .milliseconds(500)
    public var maximum: TimeAmount = .seconds(30)

    public init() {}

    /// The wait before attempt `attempt` (1 for the first).
    public func delay(beforeAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> TimeAmount {
        let doublings = min(max(attempt - 1, 0), 32)
        let grown = initial.nanoseconds.multipliedReportingOverflow(by: Int64(1) << doublings)
        let bound = max(grown.overflow ? maximum.nanoseconds : min(grown.partialValue, maximum.nanoseconds), 0)
        guard bound > 1 else { return .nanoseconds(bound) }
        return .nanoseconds(Int64.random(in: (bound / 2)...bound, using: &generator))
    }
}
