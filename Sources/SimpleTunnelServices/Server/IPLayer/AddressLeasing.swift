import NIOCore

/// Who decides which tunnel address a client gets: this server's own
/// `AddressPool` (with its lease file, the default) or `DatabaseAddressPool`,
/// shared by several servers. `ServerIPLayer` asks it and carries out what it
/// says, including ending an older session of the same client on this server.
public protocol AddressLeasing: Sendable {
    /// The IPv4 addresses it leases; nil when it leases IPv6 only.
    var range: ClosedRange<IPv4Address>? { get }
    /// The IPv6 addresses it leases beside each IPv4 one; nil when it leases IPv4 only.
    var ipv6Range: ClosedRange<IPv6Address>? { get }
    /// An address for `client` (its login or certificate subject; nil when
    /// anonymous); nil when the pool is exhausted. Fails when it cannot be decided now.
    func lease(for client: String?, on eventLoop: EventLoop) -> EventLoopFuture<AddressPool.Lease?>
    /// Frees the lease unless a newer session of its client took it over; true when freed.
    @discardableResult
    func release(_ lease: AddressPool.Lease) -> Bool
    /// Addresses this server's tunnels hold now.
    var leasedCount: Int { get }
    /// The addresses reserved for single logins (`Server.Users.<login>.IPv4Address`),
    /// given at start and at each reload: each goes to its login alone.
    func reserve(_ fixed: FixedAddresses)
    /// Where to say that a session here was replaced by one on another server (shared leases only).
    func whenReplacedElsewhere(_ end: @escaping @Sendable (UInt64) -> Void)
}

extension AddressLeasing {
    public var ipv6Range: ClosedRange<IPv6Address>? { nil }

    /// The pools as the log names them: `10.90.0.2-10.90.0.254`, with the IPv6 one after it.
    var poolDescription: String {
        [range.map { "\($0.lowerBound)-\($0.upperBound)" }, ipv6Range.map { "\($0.lowerBound)-\($0.upperBound)" }]
            .compactMap { $0 }.joined(separator: " and ")
    }
}

extension AddressPool.Lease {
    /// The lease's addresses as the log and `status` name them: `10.90.0.2`, `10.90.0.2 and fd00:90::2`, or `fd00:90::2`.
    public var addressesDescription: String {
        [address?.description, ipv6Address?.description].compactMap { $0 }.joined(separator: " and ")
    }
}

extension AddressPool: AddressLeasing {
    /// Decided at once, in memory.
    public func lease(for client: String?, on eventLoop: EventLoop) -> EventLoopFuture<Lease?> {
        eventLoop.makeSucceededFuture(lease(for: client))
    }

    /// One server: every session it replaces is its own.
    public func whenReplacedElsewhere(_ end: @escaping @Sendable (UInt64) -> Void) {}
}
