/// An address a `AddressLeaseBook` can hand out: IPv4 or IPv6, walked upwards from a pool's start.
package protocol LeasableAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The next address up; nil after the last one of the family.
    var successor: Self? { get }
    /// How many addresses `range` holds, at most `Int.max` (an IPv6 pool may hold more than can be counted).
    static func count(of range: ClosedRange<Self>) -> Int
}

extension IPv4Address: LeasableAddress {
    package var successor: IPv4Address? { advanced(byChecked: 1) }

    package static func count(of range: ClosedRange<IPv4Address>) -> Int { range.count }
}

extension IPv6Address: LeasableAddress {
    package var successor: IPv6Address? {
        rawValue == .max ? nil : IPv6Address(rawValue: rawValue + 1)
    }

    package static func count(of range: ClosedRange<IPv6Address>) -> Int {
        let span = range.upperBound.rawValue - range.lowerBound.rawValue
        return span >= UInt128(Int.max) ? Int.max : Int(span) + 1
    }
}
