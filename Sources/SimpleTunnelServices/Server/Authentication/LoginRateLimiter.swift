import NIOConcurrencyHelpers
import NIOCore

/// Failed logins per source address: after `maximumFailures` within
/// `window`, that address is refused without checking until the window
/// has passed. Shared by every tunnel of a server.
public final class LoginRateLimiter: Sendable {
    public let maximumFailures: Int
    public let window: TimeAmount
    private let failures = NIOLockedValueBox<[String: [NIODeadline]]>([:])

    public init(maximumFailures: Int = 5, window: TimeAmount = .seconds(60)) {
        self.maximumFailures = maximumFailures
        self.window = window
    }

    /// Whether `source` may try now.
    public func allows(_ source: String, now: NIODeadline = .now()) -> Bool {
        failures.withLockedValue { failures in
            let recent = (failures[source] ?? []).filter { $0 > now - window }
            failures[source] = recent.isEmpty ? nil : recent
            return recent.count < maximumFailures
        }
    }

    public func recordFailure(_ source: String, now: NIODeadline = .now()) {
        failures.withLockedValue { failures in
            var recent = (failures[source] ?? []).filter { $0 > now - window }
            recent.append(now)
            // Bounded: older entries beyond the limit say nothing more...
            failures[source] = Array(recent.suffix(maximumFailures))
            // ...and sources whose failures have aged out are forgotten.
            if failures.count > 4096 {
                failures = failures.filter { $0.value.contains { $0 > now - window } }
            }
        }
    }
}
