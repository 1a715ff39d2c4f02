extension TunnelServerConfiguration {
    // The `IPv6` dictionary (PROTOCOL.md B7), read as strictly as `IPv4`.

    static func ipv6Pool(_ node: ConfigurationNode) throws(ConfigurationError) -> ClosedRange<IPv6Address> {
        let pool = try node.dictionary()
        try pool.rejectUnknownKeys(["StartAddress", "EndAddress"])
        let start = try pool.required("StartAddress", expected: "the first IPv6 address to lease").ipv6Address()
        let end = try pool.required("EndAddress", expected: "the last IPv6 address to lease").ipv6Address()
        guard start <= end else {
            throw .inconsistent(node.keyPath, detail: "StartAddress \(start) comes after EndAddress \(end); the pool runs from StartAddress up to EndAddress, both included")
        }
        if let unusable = Self.unusableForClients.first(where: { start.rawValue <= $0.upperBound && end.rawValue >= $0.lowerBound }) {
            throw .inconsistent(node.keyPath, detail: "the pool \(start)-\(end) reaches into \(unusable.name), which cannot be a client's address; use a unique local range such as fd00:90::2 to fd00:90::ffff")
        }
        return start...end
    }

    /// What a pool may not reach into: link-local and multicast addresses never leave the tunnel's link, the others have no place on it.
    private static let unusableForClients: [(name: String, lowerBound: UInt128, upperBound: UInt128)] = [
        ("the unspecified and loopback addresses (::, ::1)", 0, 1),
        ("IPv4-mapped addresses (::ffff:0:0/96)", 0xFFFF << 32, 0xFFFF << 32 | 0xFFFF_FFFF),
        ("link-local addresses (fe80::/10)", 0xFE80 << 112, 0xFE80 << 112 | (UInt128.max >> 10)),
        ("multicast addresses (ff00::/8)", 0xFF << 120, UInt128.max),
    ]

    static func ipv6Routes(_ node: ConfigurationNode) throws(ConfigurationError) -> [IPv6Network] {
        var routes: [IPv6Network] = []
        for element in try node.array(of: "routes, each a dictionary with Address and PrefixLength") {
            let route = try element.dictionary()
            try route.rejectUnknownKeys(ipv6RouteKeys)
            let address = try route.required("Address", expected: "the route's network address, such as fd00:1::")
                .ipv6Address()
            let prefixLength = try route.required("PrefixLength", expected: "the route's prefix length, from 0 to 128, such as 64")
                .integer(in: 0...128)
            guard let network = IPv6Network(address: address, prefixLength: prefixLength) else {
                let bits = prefixLength == 0 ? 0 : address.rawValue & (UInt128.max << (128 - prefixLength))
                throw .inconsistent(element.keyPath, detail: "\(address)/\(prefixLength) has bits set beyond the prefix; did you mean \(IPv6Address(rawValue: bits))/\(prefixLength)?")
            }
            routes.append(network)
        }
        return routes
    }
}
