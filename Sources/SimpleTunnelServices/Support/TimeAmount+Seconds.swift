import NIOCore

/// Seconds a user gives (`--connect-timeout 2.5`, `--keepalive 15`), checked
/// in this one place: a finite number from zero to a day, so that turning it
/// into nanoseconds can never overflow (`1e10` used to stop the program).
public enum UserSeconds {
    /// A day, as for the configuration file's timeouts.
    public static let maximum = 86_400.0

    /// Seconds above zero, at most `maximum`.
    public static func positive(_ text: String) throws(UserSecondsError) -> Double {
        let value = try number(text)
        guard value > 0 else { throw UserSecondsError(text: text, allowsZero: false) }
        return value
    }

    /// Seconds from zero (which means "off" or "never") to `maximum`.
    public static func zeroOrPositive(_ text: String) throws(UserSecondsError) -> Double {
        try number(text, allowsZero: true)
    }

    /// Seconds above zero as a duration, for settings kept as `Duration`s.
    public static func positiveDuration(_ text: String) throws(UserSecondsError) -> Duration {
        Duration(TimeAmount(seconds: try positive(text)))
    }

    /// Seconds from zero ("off", "never") as a duration.
    public static func zeroOrPositiveDuration(_ text: String) throws(UserSecondsError) -> Duration {
        Duration(TimeAmount(seconds: try zeroOrPositive(text)))
    }

    /// `duration` as a time amount, if it is in range; for durations that did not come through the parsers above.
    public static func checked(_ duration: Duration, option: String, allowsZero: Bool = false) throws(UserSecondsError) -> TimeAmount {
        let amount = TimeAmount(duration)
        guard allowsZero ? amount >= .zero : amount > .zero, amount <= .seconds(Int64(maximum)) else {
            throw UserSecondsError(text: TimeAmount(duration).userSeconds, allowsZero: allowsZero, option: option)
        }
        return amount
    }

    /// `value` as a time amount, if it is in range; for values that did not come through the parsers above.
    public static func checked(_ value: Double, option: String, allowsZero: Bool = false) throws(UserSecondsError) -> TimeAmount {
        guard value.isFinite, allowsZero ? value >= 0 : value > 0, value <= maximum else {
            throw UserSecondsError(text: "\(value)", allowsZero: allowsZero, option: option)
        }
        return TimeAmount(seconds: value)
    }

    private static func number(_ text: String, allowsZero: Bool = false) throws(UserSecondsError) -> Double {
        guard let value = Double(text), value.isFinite, value >= 0, value <= maximum else {
            throw UserSecondsError(text: text, allowsZero: allowsZero)
        }
        return value
    }
}

/// A number of seconds out of range, said with the range.
public struct UserSecondsError: Error, CustomStringConvertible, Sendable {
    public let text: String
    public let allowsZero: Bool
    public var option: String?

    public var description: String {
        let range = allowsZero ? "0 (off) to \(Int(UserSeconds.maximum))" : "above 0, at most \(Int(UserSeconds.maximum))"
        return "\(option.map { "\($0) \(text): " } ?? "")expected seconds, \(range) (a day)"
    }
}

extension TimeAmount {
    /// Seconds as a time amount; beyond what 64-bit nanoseconds hold it saturates instead of trapping.
    public init(seconds: Double) {
        let nanoseconds = seconds * 1e9
        if nanoseconds >= Double(Int64.max) {
            self = .nanoseconds(.max)
        } else if nanoseconds <= Double(Int64.min) || nanoseconds.isNaN {
            self = .nanoseconds(nanoseconds.isNaN ? 0 : .min)
        } else {
            self = .nanoseconds(Int64(nanoseconds))
        }
    }
}

extension TimeAmount {
    /// Seconds as an operator writes them: "10", "2.5".
    public var userSeconds: String {
        let seconds = Double(nanoseconds) / 1e9
        return seconds == seconds.rounded() ? "\(Int64(seconds))" : "\(seconds)"
    }
}
