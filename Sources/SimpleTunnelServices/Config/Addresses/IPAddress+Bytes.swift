extension IPv4Address {
    /// The four bytes in network order.
    init(bytes: some Collection<UInt8>) {
        self.init(rawValue: bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}

extension IPv6Address {
    /// The sixteen bytes in network order.
    init(bytes: some Collection<UInt8>) {
        self.init(rawValue: bytes.prefix(16).reduce(UInt128(0)) { $0 << 8 | UInt128($1) })
    }

    var bytes: [UInt8] {
        (0..<16).reversed().map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt128($0))) }
    }
}

extension IPv4Address {
    var bytes: [UInt8] {
        let (a, b, c, d) = octets
        return [a, b, c, d]
    }
}
