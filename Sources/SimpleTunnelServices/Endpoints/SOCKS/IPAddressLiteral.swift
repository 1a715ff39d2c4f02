/// IP literals as text and as network-order bytes, without the C library, so
/// SOCKS addresses are converted the same way everywhere and in tests.
enum IPAddressLiteral {
    /// The 4 bytes of a dotted-quad IPv4 literal ("192.0.2.1"). Parts are
    /// 1 to 3 decimal digits without leading zeros, as `inet_pton` requires,
    /// so "010.0.0.1" is not silently read as 10.0.0.1 or as octal.
    static func ipv4Bytes(_ text: some StringProtocol) -> [UInt8]? {
        ipv4Bytes(utf8: Array(text.utf8)[...])
    }

    /// The 16 bytes of an IPv6 literal in any RFC 4291 text form, including
    /// "::" and a trailing dotted quad. Brackets and zone ids are not accepted.
    static func ipv6Bytes(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)[...]
        guard let compression = firstDoubleColon(in: utf8) else {
            guard let groups = groups(in: utf8, allowingIPv4Tail: true), groups.count == 8 else { return nil }
            return bytes(of: groups)
        }
        let head = utf8[..<compression]
        let tail = utf8[(compression + 2)...]
        guard firstDoubleColon(in: tail) == nil,
            let headGroups = groups(in: head, allowingIPv4Tail: false),
            let tailGroups = groups(in: tail, allowingIPv4Tail: true),
            headGroups.count + tailGroups.count <= 7
        else { return nil }
        let zeros = [UInt16](repeating: 0, count: 8 - headGroups.count - tailGroups.count)
        return bytes(of: headGroups + zeros + tailGroups)
    }

    /// "192.0.2.1" for 4 bytes.
    static func ipv4Text(_ bytes: some Collection<UInt8>) -> String {
        precondition(bytes.count == 4, "an IPv4 address has 4 bytes")
        return bytes.map(String.init).joined(separator: ".")
    }

    /// RFC 5952 text for 16 bytes: lower case, no leading zeros, the longest
    /// run of two or more zero groups (the first on a tie) written "::".
    /// An IPv4-mapped address (::ffff:a.b.c.d) is written as plain IPv4,
    /// because that is the host the client meant and the tunnel can reach.
    static func ipv6Text(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        if let ipv4 = mappedIPv4(in: bytes) {
            return ipv4Text(ipv4)
        }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        let run = longestZeroRun(in: groups)
        func text(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard let run else { return text(0..<8) }
        return text(0..<run.lowerBound) + "::" + text(run.upperBound..<8)
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:0:0/96).
    static func mappedIPv4(in ipv6: [UInt8]) -> [UInt8]? {
        guard ipv6.count == 16, ipv6[0..<10].allSatisfy({ $0 == 0 }), ipv6[10] == 0xFF, ipv6[11] == 0xFF else { return nil }
        return Array(ipv6[12...])
    }

    // MARK: - Parsing helpers

    private static func ipv4Bytes(utf8: ArraySlice<UInt8>) -> [UInt8]? {
        let parts = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count),
                part.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                part.count == 1 || part.first != UInt8(ascii: "0")
            else { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard value <= 255 else { return nil }
            bytes.append(UInt8(value))
        }
        return bytes
    }

    private static func firstDoubleColon(in utf8: ArraySlice<UInt8>) -> Int? {
        let colon = UInt8(ascii: ":")
        return utf8.indices.dropLast().first { utf8[$0] == colon && utf8[$0 + 1] == colon }
    }

    /// The 16-bit groups of a colon-separated run with no "::"; an empty run
    /// has none. A dotted quad may end the run when `allowingIPv4Tail`.
    private static func groups(in utf8: ArraySlice<UInt8>, allowingIPv4Tail: Bool) -> [UInt16]? {
        guard !utf8.isEmpty else { return [] }
        let pieces = utf8.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (index, piece) in pieces.enumerated() {
            if allowingIPv4Tail, index == pieces.count - 1, piece.contains(UInt8(ascii: ".")) {
                guard let quad = ipv4Bytes(utf8: piece) else { return nil }
                groups.append(UInt16(quad[0]) << 8 | UInt16(quad[1]))
                groups.append(UInt16(quad[2]) << 8 | UInt16(quad[3]))
                continue
            }
            guard (1...4).contains(piece.count) else { return nil }
            var group: UInt16 = 0
            for byte in piece {
                guard let nibble = hexValue(byte) else { return nil }
                group = group << 4 | UInt16(nibble)
            }
            groups.append(group)
        }
        return groups
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func bytes(of groups: [UInt16]) -> [UInt8] {
        groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// The longest run of at least two zero groups, the first if several tie.
    private static func longestZeroRun(in groups: [UInt16]) -> Range<Int>? {
        var best: Range<Int>?
        var start: Int?
        for index in 0...groups.count {
            if index < groups.count, groups[index] == 0 {
                start = start ?? index
            } else if let runStart = start {
                let run = runStart..<index
                if run.count >= 2, run.count > (best?.count ?? 0) { best = run }
                start = nil
            }
        }
        return best
    }
}
