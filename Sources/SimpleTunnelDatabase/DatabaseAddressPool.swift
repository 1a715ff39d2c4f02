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
/// tells that server to end it (`DatabaseSessionListener`), which it does once
/// the sessions table confirms it (`DatabaseSessionTakeover`). Session numbers
/// are random, so that no one can name another server's session by counting.
/// Pools may be shared or split per server; an address is handed out only once the database confirmed it.
public final class DatabaseAddressPool: AddressLeasing {
    public let range: ClosedRange<IPv4Address>?
    public let ipv6Range: ClosedRange<IPv6Address>?
    public let database: TunnelDatabase
    /// This server's sessions: their holder (a random 63-bit number) and the client key their database rows name.
    let held = NIOLockedValueBox<[LeaseBook.Holder: String]>([:])
    /// Takeover notices the sessions table contradicts: anyone who can connect may send one.
    let forgedNoticeLog = NIOLockedValueBox(LineRateLimiter(interval: .seconds(60)))
    /// The addresses reserved for single logins; every server sharing the database reads the same ones.
    private let fixed = NIOLockedValueBox(FixedAddresses())

    /// Leases an address of each family given.
    public init(range: ClosedRange<IPv4Address>?, ipv6Range: ClosedRange<IPv6Address>? = nil, database: TunnelDatabase) {
        self.range = range
        self.ipv6Range = ipv6Range
        self.database = database
    }

    /// Read at each lease; the database itself keeps none (each server's configuration names them).
    public func reserve(_ fixed: FixedAddresses) {
        self.fixed.withLockedValue { $0 = fixed }
    }

    public var leasedCount: Int { held.withLockedValue { $0.count } }

    /// A session number no one can guess: positive as a bigint, 1 in 2^63.
    static func newHolder() -> LeaseBook.Holder {
        var random = SystemRandomNumberGenerator()
        return LeaseBook.Holder.random(in: 1...LeaseBook.Holder(Int64.max), using: &random)
    }

    public func lease(for client: String?, on eventLoop: EventLoop) -> EventLoopFuture<AddressPool.Lease?> {
        let holder = Self.newHolder()
        // An anonymous client is not remembered: its row lives as long as its session.
        let key = client ?? "anonymous:\(database.serverID):\(holder)"
        let reserved = fixed.withLockedValue { $0 }
        let request = DatabaseLeaseRequest(
            client: key, ipv4: range.map { .ipv4($0, fixed: reserved.ipv4) }, ipv6: ipv6Range.map { .ipv6($0, fixed: reserved.ipv6) },
            serverID: database.serverID, session: holder)
        return database.perform("leasing an address", on: eventLoop) { client, logger in
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    try await request.run(on: connection, logger: logger)
                }
            } catch let error as PostgresTransactionError where error.closureError is DatabaseLeaseRequest.PoolExhausted {
                return nil
            }
        }
        .map { [self] grant in
            guard let grant else { return nil }
            held.withLockedValue { held in
                held[holder] = key
                if let replaced = grant.replacedHere { held[replaced] = nil }
            }
            return AddressPool.Lease(address: grant.address, ipv6Address: grant.ipv6Address, holder: holder, replaced: grant.replacedHere)
        }
    }

    /// Frees the session here at once and in the database soon after; a
    /// session that was replaced meanwhile leaves the newer one's row alone.
    @discardableResult
    public func release(_ lease: AddressPool.Lease) -> Bool {
        guard let key = held.withLockedValue({ $0.removeValue(forKey: lease.holder) }) else { return false }
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
                    try await client.query("DELETE FROM simpletunnel_ipv6_leases WHERE client = \(key)", logger: logger)
                }
            }
        }
        return true
    }

    /// A takeover notice ends a session only once the database confirms it.
    public func whenReplacedElsewhere(_ end: @escaping @Sendable (UInt64) -> Void) {
        let confirmations = NoticeConfirmations<UInt64>(what: "sessions taken over", logger: database.logger) { [self] session in
            await confirmTakeover(of: session, then: end)
        }
        database.whenTakeoverNoticed { session in confirmations.notice(session) }
    }
}
