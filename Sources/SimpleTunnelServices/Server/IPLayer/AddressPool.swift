import NIOConcurrencyHelpers

/// The server's pool of tunnel addresses (PROTOCOL.md A4): inclusive of both
/// ends, the lowest free address first, each held by one IP flow at a time.
public final class AddressPool: Sendable {
    public let range: ClosedRange<IPv4Address>
    private let leased = NIOLockedValueBox<Set<IPv4Address>>([])

    public init(range: ClosedRange<IPv4Address>) {
        self.range = range
    }

    /// The lowest free address, now leased; nil when the pool is exhausted.
    public func lease() -> IPv4Address? {
        leased.withLockedValue { leased in
            guard leased.count < range.count else { return nil }
            var candidate = range.lowerBound
            while leased.contains(candidate) {
                guard candidate < range.upperBound else { return nil }
                candidate = candidate + 1
            }
            leased.insert(candidate)
            return candidate
        }
    }

    public func release(_ address: IPv4Address) {
        _ = leased.withLockedValue { $0.remove(address) }
    }

    public var leasedCount: Int {
        leased.withLockedValue { $0.count }
    }
}
