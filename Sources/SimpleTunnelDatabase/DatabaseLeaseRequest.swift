import Logging
import PostgresNIO
import SimpleTunnelServices

/// One lease decided in one transaction, serialized across all servers by an
/// advisory lock: the client's remembered address if this pool holds it, else
/// the lowest address no client remembers, else one remembered by a client
/// with no session now; then this session replaces the client's previous one.
struct DatabaseLeaseRequest: Sendable {
    struct Grant: Sendable {
        let address: IPv4Address
        /// The previous session of the client when it was on this server (ended here, as without a database).
        let replacedHere: LeaseBook.Holder?
    }

    /// Arbitrary, fixed: the key of the advisory lock every lease transaction takes.
    static let lock: Int64 = 0x5354_0002
    /// Where a server hears that another one took over a session it holds: payload "SERVER SESSION".
    static let notificationChannel = "simpletunnel_sessions"

    let client: String
    let range: ClosedRange<IPv4Address>
    let serverID: String
    let session: LeaseBook.Holder

    var poolName: String { "\(range.lowerBound)-\(range.upperBound)" }

    /// Nil: the pool is exhausted.
    func run(on connection: PostgresConnection, logger: Logger) async throws -> Grant? {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lock))", logger: logger)
        guard let address = try await address(on: connection, logger: logger) else { return nil }
        var previous: (server: String, session: Int64)?
        let rows = try await connection.query("SELECT server_id, session_id FROM simpletunnel_sessions WHERE client = \(client)", logger: logger)
        for try await row in rows.decode((String, Int64).self) {
            previous = row
        }
        let session = Int64(bitPattern: self.session)
        try await connection.query(
            """
            INSERT INTO simpletunnel_sessions (client, server_id, session_id) VALUES (\(client), \(serverID), \(session))
            ON CONFLICT (client) DO UPDATE SET server_id = EXCLUDED.server_id, session_id = EXCLUDED.session_id, started_at = now()
            """, logger: logger)
        guard let (server, session) = previous else { return Grant(address: address, replacedHere: nil) }
        if server == serverID {
            return Grant(address: address, replacedHere: LeaseBook.Holder(bitPattern: session))
        }
        // Delivered when this transaction commits, to every server listening; the one named ends that session.
        let notice = "\(server) \(session)"
        try await connection.query("SELECT pg_notify(\(Self.notificationChannel), \(notice))", logger: logger)
        return Grant(address: address, replacedHere: nil)
    }

    private func address(on connection: PostgresConnection, logger: Logger) async throws -> IPv4Address? {
        let remembered = try await connection.firstValue(
            String.self, "SELECT host(address) FROM simpletunnel_leases WHERE client = \(client)", logger: logger
        ).flatMap(IPv4Address.init)
        if let remembered, range.contains(remembered) {
            try await connection.query(
                "UPDATE simpletunnel_leases SET server_id = \(serverID), updated_at = now() WHERE client = \(client)", logger: logger)
            return remembered
        }
        // Remembered from another server's pool (pools split per server): this server cannot route it.
        try await connection.query("DELETE FROM simpletunnel_leases WHERE client = \(client)", logger: logger)
        var free = try await lowestFree(on: connection, logger: logger)
        if free == nil {
            free = try await reclaimed(on: connection, logger: logger)
        }
        guard let address = free else { return nil }
        try await connection.query(
            """
            INSERT INTO simpletunnel_leases (client, address, pool, server_id)
            VALUES (\(client), \(address.description)::inet, \(poolName), \(serverID))
            """, logger: logger)
        return address
    }

    /// The lowest address of the range that no client remembers.
    private func lowestFree(on connection: PostgresConnection, logger: Logger) async throws -> IPv4Address? {
        let first = range.lowerBound.description
        let last = Int64(range.count - 1)
        return try await connection.firstValue(
            String.self,
            """
            SELECT host(\(first)::inet + step) FROM generate_series(0::bigint, \(last)::bigint) AS step
            WHERE NOT EXISTS (SELECT 1 FROM simpletunnel_leases l WHERE l.address = \(first)::inet + step)
            ORDER BY step LIMIT 1
            """, logger: logger
        ).flatMap(IPv4Address.init)
    }

    /// When every address is remembered: the lowest one whose client has no session anywhere; that client forgets it.
    private func reclaimed(on connection: PostgresConnection, logger: Logger) async throws -> IPv4Address? {
        try await connection.firstValue(
            String.self,
            """
            DELETE FROM simpletunnel_leases WHERE address = (
                SELECT l.address FROM simpletunnel_leases l
                WHERE l.address >= \(range.lowerBound.description)::inet AND l.address <= \(range.upperBound.description)::inet
                AND NOT EXISTS (SELECT 1 FROM simpletunnel_sessions s WHERE s.client = l.client)
                ORDER BY l.address LIMIT 1)
            RETURNING host(address)
            """, logger: logger
        ).flatMap(IPv4Address.init)
    }
}

extension PostgresConnection {
    /// The first row's one column, reading the rest so the connection is free for the next query.
    func firstValue<Value: PostgresDecodable & Sendable>(_ type: Value.Type, _ statement: PostgresQuery, logger: Logger) async throws -> Value? {
        let rows = try await query(statement, logger: logger)
        var first: Value?
        for try await value in rows.decode(Value.self) where first == nil {
            first = value
        }
        return first
    }
}
