import NIOConcurrencyHelpers
import NIOCore

/// Login attempts per source: after `maximumFailures` within `window`, that
/// source is refused without checking until the window has passed. An
/// attempt counts as a failure from the moment it starts, and is forgiven
/// only when its password turns out right, so guesses sent in parallel
/// cannot all be checked before the first one fails. Sources are grouped
/// as `ClientAddressGroup` does (an IPv6 /64 is one source). Shared by
/// every tunnel of a server.
public final class LoginRateLimiter: Sendable {
    public let maximumFailures: Int
    public let window: TimeAmount
    private let failures = NIOLockedValueBox<[ClientAddressGroup: [NIODeadline]]>([:])

    /// A started attempt; give it back to `succeeded` when the password was right.
    public struct Attempt: Sendable {
        let group: ClientAddressGroup
        let time: NIODeadline
    }

    public init(maximumFailures: Int = 5, window: TimeAmount = .seconds(60)) {
        self.maximumFailures = maximumFailures
        self.window = window
    }

    /// Whether `source` may try now.
    public func allows(_ source: String, now: NIODeadline = .now()) -> Bool {
        let group = ClientAddressGroup(text: source)
        return failures.withLockedValue { failures in
            recent(&failures, group, now: now).count < maximumFailures
        }
    }

    /// Starts an attempt if `source` may try now, counting it as failed until `succeeded` says otherwise.
    public func beginAttempt(_ source: String, now: NIODeadline = .now()) -> Attempt? {
        let group = ClientAddressGroup(text: source)
        return failures.withLockedValue { failures in
            var recent = recent(&failures, group, now: now)
            guard recent.count < maximumFailures else { return nil }
            recent.append(now)
            failures[group] = recent
            forgetAgedSources(&failures, now: now)
            return Attempt(group: group, time: now)
        }
    }

    /// The attempt's password was right: it no longer counts.
    public func succeeded(_ attempt: Attempt) {
        failures.withLockedValue { failures in
            guard var times = failures[attempt.group], let index = times.firstIndex(of: attempt.time) else { return }
            times.remove(at: index)
            failures[attempt.group] = times.isEmpty ? nil : times
        }
    }

    public func recordFailure(_ source: String, now: NIODeadline = .now()) {
        let group = ClientAddressGroup(text: source)
        failures.withLockedValue { failures in
            var recent = recent(&failures, group, now: now)
            recent.append(now)
            // Bounded: older entries beyond the limit say nothing more.
            failures[group] = Array(recent.suffix(maximumFailures))
            forgetAgedSources(&failures, now: now)
        }
    }

    /// `group`'s failures within the window, dropping older ones.
    private func recent(_ failures: inout [ClientAddressGroup: [NIODeadline]], _ group: ClientAddressGroup, now: NIODeadline) -> [NIODeadline] {
        let recent = (failures[group] ?? []).filter { $0 > now - window }
        failures[group] = recent.isEmpty ? nil : recent
        return recent
    }

    /// Sources whose failures have aged out are forgotten, so the table stays bounded.
    private func forgetAgedSources(_ failures: inout [ClientAddressGroup: [NIODeadline]], now: NIODeadline) {
        guard failures.count > 4096 else { return }
        failures = failures.filter { $0.value.contains { $0 > now - window } }
    }
}
