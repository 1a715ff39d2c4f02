extension IPv6Network {
    /// The fewest networks that together contain exactly `first...last`, in
    /// ascending order, as `IPv4Network.covering` does for IPv4: fd00::2–fd00::ff
    /// takes 7 (fd00::2/127, fd00::4/126, … fd00::80/121). At most 256 networks.
    public static func covering(_ range: ClosedRange<IPv6Address>) -> [IPv6Network] {
        var networks: [IPv6Network] = []
        var start = range.lowerBound.rawValue
        let end = range.upperBound.rawValue
        while true {
            // The largest block that starts at `start` (alignment) and ends by `end`.
            var hostBits = start == 0 ? 128 : start.trailingZeroBitCount
            while hostBits > 0 && (hostBits == 128 ? UInt128.max : start + (UInt128(1) << hostBits) - 1) > end {
                hostBits -= 1
            }
            guard let network = IPv6Network(address: IPv6Address(rawValue: start), prefixLength: 128 - hostBits) else {
                preconditionFailure("an aligned block is always a valid network")
            }
            networks.append(network)
            let last = hostBits == 128 ? UInt128.max : start + (UInt128(1) << hostBits) - 1
            guard last < end else { return networks }
            start = last + 1
        }
    }
}
