/// The IPv4 lease book; `Holder` is named through it everywhere.
package typealias LeaseBook = AddressLeaseBook<IPv4Address>

/// Who holds which tunnel address of one family, and which address each known
/// client had last: the pool's decisions as a plain value, free of locks and files.
///
/// A client known by its login or certificate subject gets its remembered
/// address back while it is free, and a new session of a client replaces the
/// old session holding that address instead of colliding with it. Clients
/// with no identity get the lowest free address. Addresses remembered for
/// others are handed out only when nothing else is free. A fixed address
/// (`FixedAddresses`) goes to its client alone, on every lease, and never to another.
package struct AddressLeaseBook<Address: LeasableAddress>: Sendable, Equatable {
    /// One holding of an address: by one IP flow of one tunnel.
    package typealias Holder = UInt64

    struct Holding: Sendable, Equatable {
        var holder: Holder
        var client: String?
    }

    enum Grant: Sendable, Equatable {
        /// The address was free.
        case fresh(Address)
        /// The address was held by an older session of the same client, which must now end.
        case takenOver(Address, from: Holder)
    }

    let range: ClosedRange<Address>
    private(set) var held: [Address: Holding] = [:]
    /// The address each known client had last; durable (see `LeaseFile`).
    private(set) var remembered: [String: Address]
    /// The address reserved for each client that has one; the configuration checked they lie in `range`.
    private(set) var fixed: [String: Address] = [:]
    private var reserved: Set<Address> = []

    init(range: ClosedRange<Address>, remembered: [String: Address] = [:], fixed: [String: Address] = [:]) {
        self.range = range
        // A pool that shrank since the addresses were remembered cannot give them back.
        self.remembered = remembered.filter { range.contains($0.value) }
        reserve(fixed)
    }

    /// Replaces the reservations (start and reload): whoever else remembered a
    /// reserved address forgets it, and each reserving client remembers its own.
    mutating func reserve(_ fixed: [String: Address]) {
        self.fixed = fixed.filter { range.contains($0.value) }
        reserved = Set(self.fixed.values)
        remembered = remembered.filter { !reserved.contains($0.value) }
        for (client, address) in self.fixed { remembered[client] = address }
    }

    var heldCount: Int { held.count }

    /// An address for `client` (nil: a client with no identity), held by `holder`; nil when the pool is exhausted.
    mutating func lease(for client: String?, holder: Holder) -> Grant? {
        if let client, let address = fixed[client] {
            let holding = held[address]
            held[address] = Holding(holder: holder, client: client)
            // Held by another only if it was leased before a reload reserved it: that session ends, as an older one of this client would.
            guard let holding else { return .fresh(address) }
            return .takenOver(address, from: holding.holder)
        }
        if let client, let address = remembered[client] {
            switch held[address] {
            case nil:
                held[address] = Holding(holder: holder, client: client)
                return .fresh(address)
            case .some(let holding) where holding.client == client:
                held[address] = Holding(holder: holder, client: client)
                return .takenOver(address, from: holding.holder)
            case .some:
                break  // Given away when the pool ran short; the client gets another.
            }
        }
        guard let address = lowestFree(avoidingRemembered: true) ?? lowestFree(avoidingRemembered: false) else { return nil }
        held[address] = Holding(holder: holder, client: client)
        // Whoever had it remembered loses it; a known client remembers it now.
        remembered = remembered.filter { $0.value != address }
        if let client { remembered[client] = address }
        return .fresh(address)
    }

    /// Frees `address` if `holder` still holds it (a replaced session's late release changes nothing).
    @discardableResult
    mutating func release(_ address: Address, holder: Holder) -> Bool {
        guard held[address]?.holder == holder else { return false }
        held[address] = nil
        return true
    }

    private func lowestFree(avoidingRemembered: Bool) -> Address? {
        guard held.count < Address.count(of: range) else { return nil }
        let avoided = avoidingRemembered ? Set(remembered.values) : []
        var candidate = range.lowerBound
        while true {
            if held[candidate] == nil, !reserved.contains(candidate), !avoided.contains(candidate) { return candidate }
            guard candidate < range.upperBound, let next = candidate.successor else { return nil }
            candidate = next
        }
    }
}
