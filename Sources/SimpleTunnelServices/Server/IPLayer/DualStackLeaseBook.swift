/// A client's leases of both families, decided together: one IPv4 address and,
/// when the server offers IPv6, one IPv6 address, each remembered for a known
/// client on its own (see `AddressLeaseBook`), so both come back after a
/// reconnection or a restart.
package struct DualStackLeaseBook: Sendable, Equatable {
    package typealias Holder = LeaseBook.Holder

    struct Grant: Sendable, Equatable {
        var ipv4: IPv4Address
        var ipv6: IPv6Address?
        /// The older session of the same client that held these addresses until now.
        var replaced: Holder?
    }

    private(set) var ipv4: LeaseBook
    private(set) var ipv6: AddressLeaseBook<IPv6Address>?

    init(ipv4: LeaseBook, ipv6: AddressLeaseBook<IPv6Address>? = nil) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    var heldCount: Int { ipv4.heldCount }

    /// Addresses of every family offered for `client`, held by `holder`; nil
    /// when any family's pool is exhausted (then nothing is held).
    mutating func lease(for client: String?, holder: Holder) -> Grant? {
        guard let first = ipv4.lease(for: client, holder: holder) else { return nil }
        var grant: Grant
        switch first {
        case .fresh(let address): grant = Grant(ipv4: address, replaced: nil)
        case .takenOver(let address, let old): grant = Grant(ipv4: address, replaced: old)
        }
        guard var book6 = ipv6 else { return grant }
        switch book6.lease(for: client, holder: holder) {
        case nil:
            ipv4.release(grant.ipv4, holder: holder)
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

    /// Frees both addresses if `holder` still holds them; true when the IPv4 one was freed.
    @discardableResult
    mutating func release(_ address: IPv4Address, ipv6 address6: IPv6Address?, holder: Holder) -> Bool {
        if let address6 { ipv6?.release(address6, holder: holder) }
        return ipv4.release(address, holder: holder)
    }
}
