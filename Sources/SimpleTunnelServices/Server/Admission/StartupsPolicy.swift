/// Random early drop of connections that have not finished TLS and login,
/// in the shape of OpenSSH's `MaxStartups start:rate:full`: below `start`
/// every connection is admitted; from `start` each new one is dropped with a
/// probability that rises linearly from `rate`% to 100% at `full`, where all
/// are dropped. A flood thus thins out gradually instead of the server
/// admitting everything up to a wall and then nothing.
public struct StartupsPolicy: Sendable, Hashable, CustomStringConvertible {
    public var start: Int
    /// Percent dropped at `start`.
    public var rate: Int
    public var full: Int

    /// Room for bursts of reconnecting clients; at most a few tens of MB of
    /// handshake and framing state on a small machine.
    public static let `default` = StartupsPolicy(uncheckedStart: 64, rate: 30, full: 256)

    init(uncheckedStart start: Int, rate: Int, full: Int) {
        self.start = start
        self.rate = rate
        self.full = full
    }

    public init(start: Int, rate: Int, full: Int) throws(StartupsPolicyError) {
        guard start > 0, full >= start, (0...100).contains(rate) else { throw .outOfRange(start: start, rate: rate, full: full) }
        self.init(uncheckedStart: start, rate: rate, full: full)
    }

    /// Reads `START:RATE:FULL`, or a single `FULL` (no early drop, as OpenSSH does).
    public init(parsing text: String) throws(StartupsPolicyError) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        switch fields.count {
        case 1:
            guard let full = fields[0] else { throw .unrecognizedFormat(text) }
            try self.init(start: full, rate: 100, full: full)
        case 3:
            guard let start = fields[0], let rate = fields[1], let full = fields[2] else { throw .unrecognizedFormat(text) }
            try self.init(start: start, rate: rate, full: full)
        default:
            throw .unrecognizedFormat(text)
        }
    }

    /// Whether a new connection is dropped while `startups` others are in
    /// their startup. `roll` is uniform in 0..<100 (injected so tests can pick it).
    public func drops(startups: Int, roll: Int) -> Bool {
        guard startups >= start else { return false }
        guard startups < full else { return true }
        let percent = rate + (100 - rate) * (startups - start) / (full - start)
        return roll < percent
    }

    public var description: String { "\(start):\(rate):\(full)" }
}

public enum StartupsPolicyError: Error, Hashable, CustomStringConvertible {
    case unrecognizedFormat(String)
    case outOfRange(start: Int, rate: Int, full: Int)

    public var description: String {
        switch self {
        case .unrecognizedFormat(let text):
            return "\"\(text)\": expected START:RATE:FULL (such as \(StartupsPolicy.default)) or a single number"
        case .outOfRange(let start, let rate, let full):
            return "\(start):\(rate):\(full): START must be positive, RATE a percentage (0 to 100), and FULL at least START and at most \(ServerLimit.maximumCount)"
        }
    }
}
