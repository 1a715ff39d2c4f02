import Foundation

/// One login's traffic in some span: flows' payload and IP packets each way,
/// counted at the tunnel, and when it was last seen (logging in, or carrying traffic).
public struct LoginUsage: Codable, Sendable, Hashable {
    public var bytesFromClient: UInt64
    public var bytesToClient: UInt64
    public var lastSeen: Date

    public init(bytesFromClient: UInt64 = 0, bytesToClient: UInt64 = 0, lastSeen: Date) {
        self.bytesFromClient = bytesFromClient
        self.bytesToClient = bytesToClient
        self.lastSeen = lastSeen
    }

    /// Both spans together: bytes add up, the later sighting stays.
    public func adding(_ other: LoginUsage) -> LoginUsage {
        LoginUsage(
            bytesFromClient: bytesFromClient &+ other.bytesFromClient, bytesToClient: bytesToClient &+ other.bytesToClient,
            lastSeen: max(lastSeen, other.lastSeen))
    }
}

/// A calendar day in UTC, as `YYYY-MM-DD`: usage is kept per login and day,
/// so `tunnel-server usage --since` can answer "this month".
public struct UsageDay: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let text: String

    public init(_ date: Date) {
        text = date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day())
    }

    /// `YYYY-MM-DD`, or a whole ISO 8601 time (its day in UTC); nil for anything else.
    public init?(parsing text: String) {
        if text.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil {
            // The parser reads a prefix and rolls a 13th month over: only a day that reads back the same is one.
            guard let date = try? Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().parse(text), UsageDay(date).text == text else {
                return nil
            }
            self.init(date)
        } else if text.contains("T"), let date = try? Date.ISO8601FormatStyle().parse(text) {
            self.init(date)
        } else {
            return nil
        }
    }

    public var description: String { text }
    public static func < (lhs: UsageDay, rhs: UsageDay) -> Bool { lhs.text < rhs.text }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let day = UsageDay(parsing: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(text) is not a day (YYYY-MM-DD)"))
        }
        self = day
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// One login's usage on one day: what a ledger hands a store, and what a store keeps.
public struct UsageRecord: Codable, Sendable, Hashable {
    public var login: String
    public var day: UsageDay
    public var usage: LoginUsage

    public init(login: String, day: UsageDay, usage: LoginUsage) {
        self.login = login
        self.day = day
        self.usage = usage
    }
}
