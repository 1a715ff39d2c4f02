import Logging

/// Where several servers share logins, leases and sessions (`--database`).
/// The library names only this; the PostgreSQL store is `TunnelDatabase` in
/// SimpleTunnelDatabase, which tunnel-server links and hands in as an opener,
/// so nothing below the server's executable carries a database client.
public protocol SharedServerStore: Sendable, CustomStringConvertible {
    /// This process among the servers sharing the store; logged at start.
    var serverID: String { get }
    /// Logins, looked up per attempt (they replace a users file).
    var logins: any LoginDirectory { get }
    /// Leases from `range` and `ipv6Range` (an address of each family given), shared with the other servers (they replace the lease file).
    func addressLeasing(range: ClosedRange<IPv4Address>?, ipv6Range: ClosedRange<IPv6Address>?) -> any AddressLeasing
    /// Each login's usage, where every server sharing the store adds its own (it replaces the state folder's usage file).
    var usageStore: any UsageStore { get }
    /// Calls `end` with each login removed from the store, on every server sharing it.
    func whenLoginRemoved(_ end: @escaping @Sendable (String) -> Void)
    /// Runs what the store needs (its connections) until the task is cancelled; start it first.
    func run() async
    /// Connects and brings the store's schema up to date; throws when it cannot.
    func prepare() async throws
    /// Nil while the store answers; else why not (logins are told to try again later meanwhile), for `status` and the metrics.
    var unavailability: String? { get }
}

/// Opens the store a `--database` address names, with the password from
/// `passwordFile` (else the environment); throws an error to show as it is.
public typealias SharedServerStoreOpener = @Sendable (
    _ address: String, _ passwordFile: String?, _ environment: [String: String], _ logger: Logger
) throws -> any SharedServerStore
