/// The routes the server gives its device for one family's pool: the fewest
/// that cover it. When the smallest prefix around the pool holds nothing else
/// but addresses no other host can have — the server's own tunnel address
/// (the kernel delivers to a local address before it routes), the prefix's
/// first address and, in IPv4, its broadcast — that prefix alone, as OpenVPN
/// routes its /24 to its device: one route, not 13, for 10.90.0.2-10.90.0.254.
/// Otherwise the exact cover of the pool (no other network's address is
/// taken), or of the pool and the server's address just beside it when that
/// takes fewer.
enum PoolRoutes {
    static func ipv4(pool: ClosedRange<IPv4Address>, server: IPv4Address?) -> [IPv4Network] {
        let decision = PoolRouteDecision(
            pool: UInt128(pool.lowerBound.rawValue)...UInt128(pool.upperBound.rawValue), server: server.map { UInt128($0.rawValue) },
            width: 32, hasBroadcast: true)
        switch decision.choice {
        case .prefix(let start, let length):
            return [IPv4Network(address: IPv4Address(rawValue: UInt32(start)), prefixLength: length)].compactMap { $0 }
        case .exactly(let candidates):
            return fewest(candidates.map { IPv4Network.covering(IPv4Address(rawValue: UInt32($0.lowerBound))...IPv4Address(rawValue: UInt32($0.upperBound))) })
        }
    }

    static func ipv6(pool: ClosedRange<IPv6Address>, server: IPv6Address?) -> [IPv6Network] {
        let decision = PoolRouteDecision(
            pool: pool.lowerBound.rawValue...pool.upperBound.rawValue, server: server?.rawValue, width: 128, hasBroadcast: false)
        switch decision.choice {
        case .prefix(let start, let length):
            return [IPv6Network(address: IPv6Address(rawValue: start), prefixLength: length)].compactMap { $0 }
        case .exactly(let candidates):
            return fewest(candidates.map { IPv6Network.covering(IPv6Address(rawValue: $0.lowerBound)...IPv6Address(rawValue: $0.upperBound)) })
        }
    }

    /// The first of the shortest: the pool's own cover when the server's address saves nothing.
    private static func fewest<Network>(_ covers: [[Network]]) -> [Network] {
        covers.min { $0.count < $1.count } ?? []
    }
}

/// `PoolRoutes`' decision on raw addresses of either family (`width` bits).
struct PoolRouteDecision: Equatable {
    enum Choice: Equatable {
        /// One route for this prefix.
        case prefix(start: UInt128, length: Int)
        /// The exact cover of one of these ranges, whichever takes fewest routes.
        case exactly([ClosedRange<UInt128>])
    }

    var pool: ClosedRange<UInt128>
    var server: UInt128?
    var width: Int
    /// IPv4: a prefix's last address is its broadcast, which no host has.
    var hasBroadcast: Bool

    var choice: Choice {
        let (start, length) = smallestPrefix
        if takesNothingElse(start: start, length: length) { return .prefix(start: start, length: length) }
        var candidates = [pool]
        if let server, pool.lowerBound > 0, server == pool.lowerBound - 1 { candidates.append(server...pool.upperBound) }
        if let server, pool.upperBound < lastAddress, server == pool.upperBound + 1 { candidates.append(pool.lowerBound...server) }
        return .exactly(candidates)
    }

    private var lastAddress: UInt128 { width == 128 ? .max : (UInt128(1) << width) - 1 }

    /// The longest prefix that holds both ends of the pool.
    var smallestPrefix: (start: UInt128, length: Int) {
        let hostBits = 128 - (pool.lowerBound ^ pool.upperBound).leadingZeroBitCount
        return (pool.lowerBound & ~Self.hostMask(hostBits), width - hostBits)
    }

    /// Whether every address of the prefix outside the pool is one no other host can have.
    private func takesNothingElse(start: UInt128, length: Int) -> Bool {
        let hostBits = width - length
        let last = start + Self.hostMask(hostBits)
        var spare: Set<UInt128> = []
        if let server, (start...last).contains(server) { spare.insert(server) }
        // A /31 or /32 (/127, /128) sets no address aside.
        if hostBits >= 2 {
            spare.insert(start)
            if hasBroadcast { spare.insert(last) }
        }
        let spareOutsidePool = spare.filter { !pool.contains($0) }.count
        return (pool.lowerBound - start) + (last - pool.upperBound) == UInt128(spareOutsidePool)
    }

    private static func hostMask(_ hostBits: Int) -> UInt128 {
        hostBits == 128 ? .max : (UInt128(1) << hostBits) - 1
    }
}
