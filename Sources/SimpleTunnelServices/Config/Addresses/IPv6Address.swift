/// An IPv6 address as a 128-bit number: enough for destination policy and
/// DNS server lists, not a full IPv6 toolkit.
///
/// Parses the RFC 4291 text forms: eight groups of one to four hex digits,
/// one `::` standing for one or more zero groups, and an embedded IPv4
/// address in the last 32 bits (`::ffff:1.2.3.4`). Zone identifiers
/// (`fe80::1%eth0`) are refused: a zone means nothing to a remote client or a rule.
public struct IPv6Address: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The address as a big-endian number: `::1` is 1.
    public var rawValue: UInt128

    public init(rawValue: UInt128) {
        self.rawValue = rawValue
    }

    /// The address of `ipv4` in the IPv4-mapped range `::ffff:0:0/96`.
    public init(ipv4Mapped ipv4: IPv4Address) {
        rawValue = 0xFFFF << 32 | UInt128(ipv4.rawValue)
    }

    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 45 else { return nil }
        var doubleColon: Int?
        for index in bytes.indices.dropLast() where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: ":") {
            // A second `::` (or `:::`) would make the zero run ambiguous.
            guard doubleColon == nil else { return nil }
            doubleColon = index
        }
        let groups: [UInt16]
        if let doubleColon {
            guard let head = Self.parseGroups(bytes[..<doubleColon], mayEndInIPv4: false),
                  let tail = Self.parseGroups(bytes[(doubleColon + 2)...], mayEndInIPv4: true),
                  head.count + tail.count <= 7
            else { return nil }
            groups = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let all = Self.parseGroups(bytes[...], mayEndInIPv4: true), all.count == 8 else { return nil }
            groups = all
        }
        rawValue = groups.reduce(0) { $0 << 16 | UInt128($1) }
    }

    /// Colon-separated hex groups; an empty slice is no groups. The last piece
    /// may be a dotted IPv4 address, which counts as two groups.
    private static func parseGroups(_ bytes: ArraySlice<UInt8>, mayEndInIPv4: Bool) -> [UInt16]? {
        if bytes.isEmpty { return [] }
        let pieces = bytes.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (position, piece) in pieces.enumerated() {
            if mayEndInIPv4 && position == pieces.count - 1 && piece.contains(UInt8(ascii: ".")) {
                guard let text = String(validating: piece, as: UTF8.self), let ipv4 = IPv4Address(text) else { return nil }
                groups.append(UInt16(truncatingIfNeeded: ipv4.rawValue >> 16))
                groups.append(UInt16(truncatingIfNeeded: ipv4.rawValue))
                continue
            }
            guard (1...4).contains(piece.count) else { return nil }
            var value: UInt16 = 0
            for byte in piece {
                guard let digit = hexDigitValue(byte) else { return nil }
                value = value << 4 | UInt16(digit)
            }
            groups.append(value)
        }
        return groups
    }

    /// The eight 16-bit groups, most significant first.
    public var groups: [UInt16] {
        (0..<8).map { UInt16(truncatingIfNeeded: rawValue >> (112 - 16 * $0)) }
    }

    /// The IPv4 address inside `::ffff:0:0/96`, which a dual-stack socket
    /// reports for an IPv4 peer; nil for any other address.
    public var ipv4Mapped: IPv4Address? {
        guard rawValue >> 32 == 0xFFFF else { return nil }
        return IPv4Address(rawValue: UInt32(truncatingIfNeeded: rawValue))
    }

    public var isLoopback: Bool { rawValue == 1 }
    public var isUnspecified: Bool { rawValue == 0 }

    /// The RFC 5952 form: lowercase, no leading zeros, the longest run of two
    /// or more zero groups as `::`, mapped IPv4 addresses as `::ffff:a.b.c.d`.
    public var description: String {
        if let ipv4 = ipv4Mapped { return "::ffff:\(ipv4)" }
        let groups = groups
        var bestStart = -1, bestLength = 1
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            let start = index
            while index < 8 && groups[index] == 0 { index += 1 }
            if index - start > bestLength { bestStart = start; bestLength = index - start }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String {
            slice.map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(groups[...]) }
        return hex(groups[..<bestStart]) + "::" + hex(groups[(bestStart + bestLength)...])
    }

    public static func < (lhs: IPv6Address, rhs: IPv6Address) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
