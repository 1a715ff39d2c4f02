import NIOCore

/// Lets one log line through per interval and counts the rest, for events a
/// peer can cause as often as it likes: a flood of refusals must not become a
/// flood of log lines.
public struct LogRateLimiter: Sendable {
    public let interval: TimeAmount
    private var nextLine: NIODeadline?
    private var suppressed = 0

    public init(interval: TimeAmount = .seconds(10)) {
        self.interval = interval
    }

    /// Nil: stay quiet. Otherwise log now, saying how many lines were left out since the last.
    public mutating func admit(now: NIODeadline = .now()) -> Int? {
        if let nextLine, now < nextLine {
            suppressed += 1
            return nil
        }
        nextLine = now + interval
        defer { suppressed = 0 }
        return suppressed
    }
}
