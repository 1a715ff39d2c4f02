import Logging
import NIOConcurrencyHelpers

/// The server's pool of tunnel addresses (PROTOCOL.md A4): inclusive of both
/// ends, each held by one IP flow at a time. Known clients get their last
/// address back (see `LeaseBook`), also after a restart when a `LeaseFile` is given.
public final class AddressPool: Sendable {
    public struct Lease: Sendable, Equatable {
        /// Nil when the server offers IPv6 only.
        public let address: IPv4Address?
        /// Set when the server offers IPv6 (`IPv6.Pool`).
        public let ipv6Address: IPv6Address?
        package let holder: LeaseBook.Holder
        /// The older session of the same client that held the address until now.
        package let replaced: LeaseBook.Holder?

        package init(address: IPv4Address?, ipv6Address: IPv6Address? = nil, holder: LeaseBook.Holder, replaced: LeaseBook.Holder?) {
            self.address = address
            self.ipv6Address = ipv6Address
            self.holder = holder
            self.replaced = replaced
        }
    }

    public var range: ClosedRange<IPv4Address>? { state.withLockedValue { $0.book.ipv4?.range } }
    public var ipv6Range: ClosedRange<IPv6Address>? { state.withLockedValue { $0.book.ipv6?.range } }
    private let state: NIOLockedValueBox<(book: DualStackLeaseBook, nextHolder: LeaseBook.Holder, generation: UInt64)>
    private let file: LeaseFile?
    /// The generation last written: saves run outside `state`'s lock, and an older one never overwrites a newer.
    private let saved = NIOLockedValueBox<UInt64>(0)
    /// Releases asked for so far, freeing or not (tests wait for one instead of sleeping).
    private let releases = NIOLockedValueBox(0)
    /// A full or read-only state folder fails every save: one line a minute at most, and one when a save works again.
    private let saveFailures = NIOLockedValueBox((log: LineRateLimiter(interval: .seconds(60)), failing: false))
    private let logger: Logger

    /// Loads the remembered leases from `file`, if given; fails when it is unreadable.
    /// With `ipv6Range`, every lease holds an address of each family; with only `ipv6Range`, IPv6 ones only.
    public init(
        range: ClosedRange<IPv4Address>?, ipv6Range: ClosedRange<IPv6Address>? = nil, file: LeaseFile? = nil,
        logger: Logger = Logger(label: "tunnel-server")
    ) throws(LeaseFileError) {
        let remembered = try file?.load() ?? LeaseFile.Leases()
        let book = DualStackLeaseBook(
            ipv4: range.map { LeaseBook(range: $0, remembered: remembered.ipv4) },
            ipv6: ipv6Range.map { AddressLeaseBook(range: $0, remembered: remembered.ipv6) }
        )
        self.state = NIOLockedValueBox((book, 1, 0))
        self.file = file
        self.logger = logger
    }

    /// An address for `client` (its login or certificate subject; nil when
    /// anonymous); nil when the pool is exhausted.
    public func lease(for client: String? = nil) -> Lease? {
        let (grant, holder, changed) = state.withLockedValue { state in
            let holder = state.nextHolder
            state.nextHolder += 1
            let before = Self.remembered(in: state.book)
            let grant = state.book.lease(for: client, holder: holder)
            let after = Self.remembered(in: state.book)
            guard after != before else { return (grant, holder, nil as (UInt64, LeaseFile.Leases)?) }
            state.generation += 1
            return (grant, holder, (state.generation, after))
        }
        if let (generation, remembered) = changed {
            save(remembered, generation: generation)
        }
        guard let grant else { return nil }
        return Lease(address: grant.ipv4, ipv6Address: grant.ipv6, holder: holder, replaced: grant.replaced)
    }

    /// The addresses reserved for single logins from now on (start and reload); saved when what is remembered changes.
    public func reserve(_ fixed: FixedAddresses) {
        let changed = state.withLockedValue { state in
            let before = Self.remembered(in: state.book)
            state.book.reserve(fixed)
            let after = Self.remembered(in: state.book)
            guard after != before else { return nil as (UInt64, LeaseFile.Leases)? }
            state.generation += 1
            return (state.generation, after)
        }
        if let (generation, remembered) = changed {
            save(remembered, generation: generation)
        }
    }

    private static func remembered(in book: DualStackLeaseBook) -> LeaseFile.Leases {
        LeaseFile.Leases(ipv4: book.ipv4?.remembered ?? [:], ipv6: book.ipv6?.remembered ?? [:])
    }

    /// Frees the lease unless a newer session of its client took it over; true when freed.
    @discardableResult
    public func release(_ lease: Lease) -> Bool {
        defer { releases.withLockedValue { $0 += 1 } }
        return state.withLockedValue { $0.book.release(lease.address, ipv6: lease.ipv6Address, holder: lease.holder) }
    }

    var releasesRequested: Int { releases.withLockedValue { $0 } }

    /// Rare (a client's first lease, or one given away), so written at once and in full.
    private func save(_ remembered: LeaseFile.Leases, generation: UInt64) {
        guard let file else { return }
        saved.withLockedValue { saved in
            guard generation > saved else { return }
            do {
                try file.save(remembered)
                saved = generation
                let recovered = saveFailures.withLockedValue { failures in
                    defer { failures.failing = false }
                    return failures.failing
                }
                if recovered { logger.notice("leases saved again", metadata: ["leases": "\(file.path)"]) }
            } catch {
                // Each save replaces the file whole (`AtomicFile`): the last good one stays, and memory keeps the rest.
                let unlogged = saveFailures.withLockedValue { failures in
                    failures.failing = true
                    return failures.log.admit()
                }
                guard let unlogged else { return }
                logger.error(
                    "\(error)",
                    metadata: [
                        "consequence": "the last saved file stays and the server serves from memory; clients may get other addresses after a restart",
                        "unlogged": "\(unlogged)",
                    ])
            }
        }
    }

    /// Known clients with an address remembered (loaded from the file at start, or leased since).
    public var rememberedCount: Int {
        state.withLockedValue { state in
            let remembered = Self.remembered(in: state.book)
            return max(remembered.ipv4.count, remembered.ipv6.count)
        }
    }

    public var leasedCount: Int {
        state.withLockedValue { $0.book.heldCount }
    }
}
