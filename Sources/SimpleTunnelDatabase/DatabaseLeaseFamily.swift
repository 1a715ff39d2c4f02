import Logging
import PostgresNIO
import SimpleTunnelServices

/// Where one family's remembered addresses live: IPv4 in `simpletunnel_leases`,
/// IPv6 in `simpletunnel_ipv6_leases`, each address UNIQUE so no two servers
/// ever hand out the same one. Picks a client's address inside the lease
/// transaction of `DatabaseLeaseRequest`, which holds the lock.
struct DatabaseLeaseFamily<Address: LeasableAddress>: Sendable {
    /// One of the two fixed table names above, never text from outside.
    let table: String
    let range: ClosedRange<Address>
    let parse: @Sendable (String) -> Address?
    /// Addresses reserved for single clients (`FixedAddresses`): each is its client's and no one else's.
    var fixed: [String: Address] = [:]

    static func ipv4(_ range: ClosedRange<IPv4Address>, fixed: [String: IPv4Address] = [:]) -> DatabaseLeaseFamily<IPv4Address> {
        DatabaseLeaseFamily<IPv4Address>(table: "simpletunnel_leases", range: range, parse: { IPv4Address($0) }, fixed: fixed)
    }

    static func ipv6(_ range: ClosedRange<IPv6Address>, fixed: [String: IPv6Address] = [:]) -> DatabaseLeaseFamily<IPv6Address> {
        DatabaseLeaseFamily<IPv6Address>(table: "simpletunnel_ipv6_leases", range: range, parse: { IPv6Address($0) }, fixed: fixed)
    }

    /// The reserved addresses as text, for `= ANY(...::inet[])`.
    private var reservedTexts: [String] { fixed.values.map(\.description).sorted() }

    var poolName: String { "\(range.lowerBound)-\(range.upperBound)" }

    /// The client's fixed address if it has one; else its remembered address if this pool holds it (and reserves it for no one else), else the lowest
    /// address no client remembers, else one remembered by a client with no
    /// session now; nil when the pool is exhausted.
    func address(for client: String, serverID: String, on connection: PostgresConnection, logger: Logger) async throws -> Address? {
        if let own = fixed[client] {
            // Every server reads the same reservations; a row of another client naming it predates them and is forgotten.
            try await connection.query(
                "DELETE FROM \(unescaped: table) WHERE client = \(client) OR address = \(own.description)::inet", logger: logger)
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (client, address, pool, server_id)
                VALUES (\(client), \(own.description)::inet, \(poolName), \(serverID))
                """, logger: logger)
            return own
        }
        let remembered = try await connection.firstValue(
            String.self, "SELECT host(address) FROM \(unescaped: table) WHERE client = \(client)", logger: logger
        ).flatMap(parse)
        if let remembered, range.contains(remembered), !fixed.values.contains(remembered) {
            try await connection.query(
                "UPDATE \(unescaped: table) SET server_id = \(serverID), updated_at = now() WHERE client = \(client)", logger: logger)
            return remembered
        }
        // Remembered from another server's pool (pools split per server): this server cannot route it.
        try await connection.query("DELETE FROM \(unescaped: table) WHERE client = \(client)", logger: logger)
        var free = try await lowestFree(on: connection, logger: logger)
        if free == nil {
            free = try await reclaimed(on: connection, logger: logger)
        }
        guard let address = free else { return nil }
        try await connection.query(
            """
            INSERT INTO \(unescaped: table) (client, address, pool, server_id)
            VALUES (\(client), \(address.description)::inet, \(poolName), \(serverID))
            """, logger: logger)
        return address
    }

    /// The lowest address of the range that no client remembers. Only the
    /// first (remembered + 1) addresses can hold it, which bounds the search
    /// in an IPv6 pool too large to walk.
    private func lowestFree(on connection: PostgresConnection, logger: Logger) async throws -> Address? {
        let first = range.lowerBound.description
        let rows = try await connection.firstValue(Int64.self, "SELECT count(*) FROM \(unescaped: table)", logger: logger) ?? 0
        let last = min(Int64(clamping: Address.count(of: range) - 1), rows + Int64(fixed.count))
        return try await connection.firstValue(
            String.self,
            """
            SELECT host(\(first)::inet + step) FROM generate_series(0::bigint, \(last)::bigint) AS step
            WHERE NOT EXISTS (SELECT 1 FROM \(unescaped: table) l WHERE l.address = \(first)::inet + step)
            AND NOT (\(first)::inet + step = ANY(\(reservedTexts)::inet[]))
            ORDER BY step LIMIT 1
            """, logger: logger
        ).flatMap(parse)
    }

    /// When every address is remembered: the lowest one whose client has no session anywhere; that client forgets it.
    private func reclaimed(on connection: PostgresConnection, logger: Logger) async throws -> Address? {
        try await connection.firstValue(
            String.self,
            """
            DELETE FROM \(unescaped: table) WHERE address = (
                SELECT l.address FROM \(unescaped: table) l
                WHERE l.address >= \(range.lowerBound.description)::inet AND l.address <= \(range.upperBound.description)::inet
                AND NOT EXISTS (SELECT 1 FROM simpletunnel_sessions s WHERE s.client = l.client)
                AND NOT (l.address = ANY(\(reservedTexts)::inet[]))
                ORDER BY l.address LIMIT 1)
            RETURNING host(address)
            """, logger: logger
        ).flatMap(parse)
    }
}
