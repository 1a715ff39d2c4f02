import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Turns refusals a peer can cause at any rate into at most one log line per
/// `interval`: the first refusal is reported at once, later ones are counted
/// and reported (with their counts) by the first refusal after the interval.
public struct RefusalLogThrottle<Reason: Hashable & Sendable>: Sendable {
    public let interval: TimeAmount
    private var lastReport: NIODeadline?
    private var counts: [Reason: Int] = [:]

    public init(interval: TimeAmount = .seconds(10)) {
        self.interval = interval
    }

    /// Counts one refusal; returns the counts to log now (this one included), or nil to stay quiet.
    public mutating func note(_ reason: Reason, now: NIODeadline) -> [Reason: Int]? {
        counts[reason, default: 0] += 1
        if let lastReport, now < lastReport + interval { return nil }
        lastReport = now
        defer { counts = [:] }
        return counts
    }
}

/// A `RefusalLogThrottle` with its logger, shared by every tunnel of a server.
final class ThrottledRefusalLog<Reason: Hashable & Sendable & RawRepresentable & CustomStringConvertible>: Sendable
where Reason.RawValue == String {
    private let throttle: NIOLockedValueBox<RefusalLogThrottle<Reason>>
    private let message: String
    private let logger: Logger

    init(_ message: String, interval: TimeAmount, logger: Logger) {
        self.throttle = NIOLockedValueBox(RefusalLogThrottle(interval: interval))
        self.message = message
        self.logger = logger
    }

    /// Logs the refusal with the counts since the last line, unless a line went out within the interval.
    func note(_ reason: Reason, metadata: @autoclosure () -> Logger.Metadata = [:]) {
        guard let counts = throttle.withLockedValue({ $0.note(reason, now: .now()) }) else { return }
        var metadata = metadata()
        metadata["interval"] = "\(throttle.withLockedValue { $0.interval })"
        for (reason, count) in counts {
            metadata[reason.rawValue] = "\(count)"
        }
        logger.warning("\(message): \(reason)", metadata: metadata)
    }
}
