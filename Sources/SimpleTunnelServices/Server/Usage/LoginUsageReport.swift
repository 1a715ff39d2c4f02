import Foundation

/// What `tunnel-server usage` shows, one row per login, by login.
/// Logins come from peers: JSON escapes them, the text form quotes them (`PeerText`).
public struct LoginUsageReport: Codable, Sendable, Equatable {
    public struct Login: Codable, Sendable, Equatable {
        public var login: String
        public var bytesFromClient: UInt64
        public var bytesToClient: UInt64
        /// ISO 8601, to the second.
        public var lastSeen: String
    }

    /// The first day counted (`--since`), or nil for everything kept.
    public var since: String?
    /// Where the figures are kept: the state folder's file, or the database all servers add to.
    public var keptIn: String
    public var logins: [Login]

    public init(_ usage: [String: LoginUsage], since: UsageDay?, keptIn: String) {
        self.since = since?.text
        self.keptIn = keptIn
        logins = usage.sorted { $0.key < $1.key }.map {
            Login(
                login: $0.key, bytesFromClient: $0.value.bytesFromClient, bytesToClient: $0.value.bytesToClient,
                lastSeen: $0.value.lastSeen.formatted(.iso8601))
        }
    }

    public var text: String {
        let span = since.map { "since \($0) (UTC)" } ?? "since counting began"
        guard !logins.isEmpty else { return "no usage \(span), in \(keptIn)" }
        let rows = [["LOGIN", "FROM CLIENT", "TO CLIENT", "LAST SEEN"]]
            + logins.map { [PeerText.quoted($0.login, limit: 64), Self.bytes($0.bytesFromClient), Self.bytes($0.bytesToClient), $0.lastSeen] }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        let table = rows.map { row in
            row.enumerated().map { column, cell in
                column == 3 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return (["usage \(span), in \(keptIn)"] + table).joined(separator: "\n")
    }

    /// Exact bytes, with a readable size beside from a kilobyte up.
    static func bytes(_ count: UInt64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = -1
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit < 0 ? "\(count) B" : "\(count) B (\(String(format: "%.1f", value)) \(units[unit]))"
    }
}
