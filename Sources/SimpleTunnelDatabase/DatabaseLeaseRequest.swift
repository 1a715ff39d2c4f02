import Logging
import PostgresNIO
import SimpleTunnelServices

/// One lease decided in one transaction, serialized across all servers by an
/// advisory lock: an address of each family the server offers (see
/// `DatabaseLeaseFamily`); then this session replaces the client's previous one.
struct DatabaseLeaseRequest: Sendable {
    struct Grant: Sendable {
        let address: IPv4Address?
        let ipv6Address: IPv6Address?
        /// The previous session of the client when it was on this server (ended here, as without a database).
        let replacedHere: LeaseBook.Holder?
    }

    /// Arbitrary, fixed: the key of the advisory lock every lease transaction takes.
    static let lock: Int64 = 0x5354_0002
    /// Where a server hears that another one took over a session it holds: payload "SERVER SESSION".
    static let notificationChannel = "simpletunnel_sessions"

    let client: String
    let ipv4: DatabaseLeaseFamily<IPv4Address>?
    let ipv6: DatabaseLeaseFamily<IPv6Address>?
    let serverID: String
    let session: LeaseBook.Holder

    /// Nil: the pool is exhausted.
    func run(on connection: PostgresConnection, logger: Logger) async throws -> Grant? {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lock))", logger: logger)
        var address: IPv4Address?
        if let ipv4 {
            address = try await ipv4.address(for: client, serverID: serverID, on: connection, logger: logger)
            // Exhausted: the transaction is rolled back with the error, so nothing is held.
            guard address != nil else { throw PoolExhausted() }
        }
        var address6: IPv6Address?
        if let ipv6 {
            address6 = try await ipv6.address(for: client, serverID: serverID, on: connection, logger: logger)
            guard address6 != nil else { throw PoolExhausted() }
        }
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
        guard let (server, session) = previous else { return Grant(address: address, ipv6Address: address6, replacedHere: nil) }
        if server == serverID {
            return Grant(address: address, ipv6Address: address6, replacedHere: LeaseBook.Holder(bitPattern: session))
        }
        // Delivered when this transaction commits, to every server listening; the one named ends that session.
        let notice = "\(server) \(session)"
        try await connection.query("SELECT pg_notify(\(Self.notificationChannel), \(notice))", logger: logger)
        return Grant(address: address, ipv6Address: address6, replacedHere: nil)
    }

    /// A family's pool is exhausted: thrown to roll back what the transaction
    /// already wrote, and answered as an exhausted pool.
    struct PoolExhausted: Error {}
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
