extension IPv4Network {
    /// The fewest networks that together contain exactly `first...last`,
    /// in ascending order: 10.0.0.2–10.0.0.254 takes 13 (10.0.0.2/31,
    /// 10.0.0.4/30, … 10.0.0.252/31, 10.0.0.254/32); 0.0.0.0–255.255.255.255 is 0.0.0.0/0.
    /// Used to route an address range, which routes can only express as prefixes.
    public static func covering(_ range: ClosedRange<IPv4Address>) -> [IPv4Network] {
        var networks: [IPv4Network] = []
        // UInt64 so that stepping past 255.255.255.255 cannot overflow.
        var start = UInt64(range.lowerBound.rawValue)
        let end = UInt64(range.upperBound.rawValue)
        while start <= end {
            // The largest block that starts at `start` (alignment) and fits before `end`.
            let alignment = start == 0 ? 32 : start.trailingZeroBitCount
            var hostBits = min(alignment, 32)
            while hostBits > 0 && start + (UInt64(1) << hostBits) - 1 > end {
                hostBits -= 1
            }
            guard let network = IPv4Network(address: IPv4Address(rawValue: UInt32(start)), prefixLength: 32 - hostBits) else {
                preconditionFailure("an aligned block is always a valid network")
            }
            networks.append(network)
            start += UInt64(1) << hostBits
        }
        return networks
    }
}
