import NIOCore

/// Lets one log line through per interval and counts what it held back, by
/// kind, for events a peer can cause as often as it likes: a flood of
/// refusals or dropped packets must not become a flood of log lines. The one
/// throttle of every such line; the first event is reported at once.
public struct LogRateLimiter<Key: Hashable & Sendable>: Sendable {
    public let interval: TimeAmount
    private var nextLine: NIODeadline?
    private var counts: [Key: Int] = [:]

    public init(interval: TimeAmount = .seconds(10)) {
        self.interval = interval
    }

    /// Counts `count` events of `key`. Nil: stay quiet. Otherwise log now, with
    /// the counts of every kind since the last line, these included.
    public mutating func admit(_ key: Key, count: Int = 1, now: NIODeadline = .now()) -> [Key: Int]? {
        counts[key, default: 0] += count
        if let nextLine, now < nextLine { return nil }
        nextLine = now + interval
        defer { counts = [:] }
        return counts
    }
}

/// The one kind of a line that has no kinds.
public enum LogLine: Hashable, Sendable {
    case line
}

/// A throttle for one kind of line.
public typealias LineRateLimiter = LogRateLimiter<LogLine>

extension LogRateLimiter where Key == LogLine {
    /// Nil: stay quiet. Otherwise log now, saying how many lines were left out since the last.
    public mutating func admit(now: NIODeadline = .now()) -> Int? {
        admit(.line, now: now).map { ($0[.line] ?? 1) - 1 }
    }
}
