import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A `LogRateLimiter` of refusals by reason with its logger, shared by every tunnel of a server.
final class ThrottledRefusalLog<Reason: Hashable & Sendable & RawRepresentable & CustomStringConvertible>: Sendable
where Reason.RawValue == String {
    private let throttle: NIOLockedValueBox<LogRateLimiter<Reason>>
    private let message: String
    private let logger: Logger

    init(_ message: String, interval: TimeAmount, logger: Logger) {
        self.throttle = NIOLockedValueBox(LogRateLimiter(interval: interval))
        self.message = message
        self.logger = logger
    }

    /// Logs the refusal with the counts since the last line, unless a line went out within the interval.
    func note(_ reason: Reason, metadata: @autoclosure () -> Logger.Metadata = [:]) {
        guard let counts = throttle.withLockedValue({ $0.admit(reason) }) else { return }
        var metadata = metadata()
        metadata["interval"] = "\(throttle.withLockedValue { $0.interval })"
        for (reason, count) in counts {
            metadata[reason.rawValue] = "\(count)"
        }
        logger.warning("\(message): \(reason)", metadata: metadata)
    }
}
