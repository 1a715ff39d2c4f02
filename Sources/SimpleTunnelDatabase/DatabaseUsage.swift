import Foundation
import PostgresNIO
import SimpleTunnelServices

/// Each login's usage per day in the shared database: every server adds what
/// it counted, in one transaction per flush, so the figures are all servers'
/// together and a flush is kept whole or not at all (and then offered again).
struct DatabaseUsage: UsageStore {
    let database: TunnelDatabase

    func add(_ records: [UsageRecord]) async throws {
        guard !records.isEmpty else { return }
        try await database.perform("keeping usage") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                for record in records {
                    let (from, to) = (Int64(clamping: record.usage.bytesFromClient), Int64(clamping: record.usage.bytesToClient))
                    try await connection.query(
                        """
                        INSERT INTO simpletunnel_usage (login, day, bytes_from_client, bytes_to_client, last_seen)
                        VALUES (\(record.login), \(record.day.text)::date, \(from), \(to), \(record.usage.lastSeen))
                        ON CONFLICT (login, day) DO UPDATE SET
                            bytes_from_client = simpletunnel_usage.bytes_from_client + EXCLUDED.bytes_from_client,
                            bytes_to_client = simpletunnel_usage.bytes_to_client + EXCLUDED.bytes_to_client,
                            last_seen = greatest(simpletunnel_usage.last_seen, EXCLUDED.last_seen)
                        """, logger: logger)
                }
            }
        }
    }

    func totals(since: UsageDay?) async throws -> [String: LoginUsage] {
        try await database.perform("reading usage") { client, logger in
            let first = since?.text ?? "0001-01-01"
            let rows = try await client.query(
                """
                SELECT login, sum(bytes_from_client)::bigint, sum(bytes_to_client)::bigint, max(last_seen)
                FROM simpletunnel_usage WHERE day >= \(first)::date GROUP BY login
                """, logger: logger)
            var totals: [String: LoginUsage] = [:]
            for try await (login, from, to, seen) in rows.decode((String, Int64, Int64, Date).self) {
                totals[login] = LoginUsage(bytesFromClient: UInt64(clamping: from), bytesToClient: UInt64(clamping: to), lastSeen: seen)
            }
            return totals
        }
    }
}
