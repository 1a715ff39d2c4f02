import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import SimpleTunnelServices

/// Tunnel addresses shared by several servers through the database: one
/// address per known client across all of them (a client gets its address
/// back from any server whose pool holds it), never the same address to two
/// clients (the table's UNIQUE constraint, and allocation in a transaction),
/// and one session per client: taking over from a session on another server
/// tells that server to end it (`DatabaseSessionListener`). Pools may be shared
/// or split per server; an address is handed out only once the database confirmed it.
public final class DatabaseAddressPool: AddressLeasing {
    public let range: ClosedRange<IPv4Address>
    public let database: TunnelDatabase
    /// This server's sessions: their holder and the client key their database rows name.
    private let state = NIOLockedValueBox<(nextHolder: LeaseBook.Holder, held: [LeaseBook.Holder: String])>((1, [:]))

    public init(range: ClosedRange<IPv4Address>, database: TunnelDatabase) {
        self.range = range
        self.database = database
    }

    public var leasedCount: Int { state.withLockedValue { $0.held.count } }

    public func lease(for client: String?, on eventLoop: EventLoop) -> EventLoopFuture<AddressPool.Lease?> {
        let (holder, key) = state.withLockedValue { state in
            defer { state.nextHolder += 1 }
            // An anonymous client is not remembered: its row lives as long as its session.
            return (state.nextHolder, client ?? "anonymous:\(database.serverID):\(state.nextHolder)")
        }
        let request = DatabaseLeaseRequest(client: key, range: range, serverID: database.serverID, session: holder)
        return database.perform("leasing an address", on: eventLoop) { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                try await request.run(on: connection, logger: logger)
            }
        }
        .map { [self] grant in
            guard let grant else { return nil }
            state.withLockedValue { state in
                state.held[holder] = key
                if let replaced = grant.replacedHere { state.held[replaced] = nil }
            }
            return AddressPool.Lease(address: grant.address, holder: holder, replaced: grant.replacedHere)
        }
    }

    /// Frees the session here at once and in the database soon after; a
    /// session that was replaced meanwhile leaves the newer one's row alone.
    @discardableResult
    public func release(_ lease: AddressPool.Lease) -> Bool {
        guard let key = state.withLockedValue({ $0.held.removeValue(forKey: lease.holder) }) else { return false }
        let serverID = database.serverID
        let session = Int64(bitPattern: lease.holder)
        let database = self.database
        Task {
            // Unreachable: the row stays until the client's next session replaces it, which costs nothing meanwhile.
            try? await database.perform("ending a session") { client, logger in
                try await client.query(
                    """
                    DELETE FROM simpletunnel_sessions WHERE client = \(key) AND server_id = \(serverID) AND session_id = \(session)
                    """, logger: logger)
                if key.hasPrefix("anonymous:") {
                    try await client.query("DELETE FROM simpletunnel_leases WHERE client = \(key)", logger: logger)
                }
            }
        }
        return true
    }

    public func whenReplacedElsewhere(_ end: @escaping @Sendable (UInt64) -> Void) {
        database.whenSessionEnded(end)
    }
}
