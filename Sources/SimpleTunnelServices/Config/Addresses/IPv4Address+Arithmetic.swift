/// Offsets between addresses, for walking a lease pool. Like integer
/// arithmetic, `+` and `-` trap when the result leaves 0.0.0.0...255.255.255.255;
/// `advanced(byChecked:)` is the non-trapping form for values that come from outside.
///
/// `Strideable` (with a signed stride) makes `ClosedRange<IPv4Address>` a
/// collection: `(start...end).count` is the size of an inclusive pool.
extension IPv4Address: Strideable {
    public typealias Stride = Int64

    public func distance(to other: IPv4Address) -> Int64 {
        Int64(other.rawValue) - Int64(rawValue)
    }

    public func advanced(by offset: Int64) -> IPv4Address {
        guard let result = advanced(byChecked: offset) else {
            preconditionFailure("\(self) advanced by \(offset) is outside the IPv4 address space")
        }
        return result
    }

    /// The address `offset` further on, or nil outside the IPv4 address space.
    public func advanced(byChecked offset: Int64) -> IPv4Address? {
        let (sum, overflow) = Int64(rawValue).addingReportingOverflow(offset)
        guard !overflow, let value = UInt32(exactly: sum) else { return nil }
        return IPv4Address(rawValue: value)
    }

    public static func + (address: IPv4Address, offset: Int64) -> IPv4Address {
        address.advanced(by: offset)
    }

    public static func - (address: IPv4Address, offset: Int64) -> IPv4Address {
        address.advanced(by: -offset)
    }
}
