/// A client's leases of both families, decided together: one address of each
/// family the server offers (IPv4, IPv6 or both), each remembered for a known
/// client on its own (see `AddressLeaseBook`), so both come back after a
/// reconnection or a restart.
package struct DualStackLeaseBook: Sendable, Equatable {
    package typealias Holder = LeaseBook.Holder

    struct Grant: Sendable, Equatable {
        var ipv4: IPv4Address?
        var ipv6: IPv6Address?
        /// The older session of the same client that held these addresses until now.
        var replaced: Holder?
    }

    private(set) var ipv4: LeaseBook?
    private(set) var ipv6: AddressLeaseBook<IPv6Address>?

    /// At least one family: a book with neither leases nothing.
    init(ipv4: LeaseBook?, ipv6: AddressLeaseBook<IPv6Address>? = nil) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    /// Replaces the addresses reserved for single clients, of both families.
    mutating func reserve(_ fixed: FixedAddresses) {
        ipv4?.reserve(fixed.ipv4)
        ipv6?.reserve(fixed.ipv6)
    }

    /// Leases held: each holds one address of every family offered.
    var heldCount: Int { ipv4?.heldCount ?? ipv6?.heldCount ?? 0 }

    /// Addresses of every family offered for `client`, held by `holder`; nil
    /// when any family's pool is exhausted (then nothing is held).
    mutating func lease(for client: String?, holder: Holder) -> Grant? {
        var grant = Grant(ipv4: nil, ipv6: nil, replaced: nil)
        if var book4 = ipv4 {
            switch book4.lease(for: client, holder: holder) {
            case nil:
                return nil
            case .fresh(let address):
                grant.ipv4 = address
            case .takenOver(let address, let old):
                grant.ipv4 = address
                grant.replaced = old
            }
            ipv4 = book4
        }
        guard var book6 = ipv6 else { return grant.ipv4 == nil ? nil : grant }
        switch book6.lease(for: client, holder: holder) {
        case nil:
            if let address = grant.ipv4 { ipv4?.release(address, holder: holder) }
            return nil
        case .fresh(let address):
            grant.ipv6 = address
        case .takenOver(let address, let old):
            grant.ipv6 = address
            grant.replaced = grant.replaced ?? old
        }
        ipv6 = book6
        return grant
    }

    /// Frees the lease's addresses if `holder` still holds them; true when they were freed.
    @discardableResult
    mutating func release(_ address: IPv4Address?, ipv6 address6: IPv6Address?, holder: Holder) -> Bool {
        let freed6 = address6.map { ipv6?.release($0, holder: holder) ?? false }
        let freed4 = address.map { ipv4?.release($0, holder: holder) ?? false }
        return freed4 ?? freed6 ?? false
    }
}
