/// An IPv4 address as the 32-bit number it is, so that pools, netmasks and
/// policy rules are plain integer arithmetic.
///
/// Text is parsed strictly as four decimal octets (`a.b.c.d`). Leading zeros
/// (`01.2.3.4`) are refused: `inet_aton` reads them as octal, so accepting
/// them would let the same text mean different addresses to us and to the
/// system resolver. Shorthands such as `10.1` or `0x7f.1` are refused for the
/// same reason.
public struct IPv4Address: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The address in host byte order: `10.0.0.1` is `0x0A00_0001`.
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        rawValue = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Parses a dotted quad; nil for anything else, including surrounding spaces.
    public init?(_ text: some StringProtocol) {
        var value: UInt32 = 0
        var octetCount = 0
        for part in text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard octetCount < 4, let octet = Self.parseOctet(part) else { return nil }
            value = value << 8 | UInt32(octet)
            octetCount += 1
        }
        guard octetCount == 4 else { return nil }
        rawValue = value
    }

    /// One to three ASCII digits, no leading zero unless the octet is `0`, at most 255.
    private static func parseOctet(_ digits: some Collection<UInt8>) -> UInt8? {
        guard (1...3).contains(digits.count), digits.allSatisfy(isASCIIDigit) else { return nil }
        if digits.count > 1 && digits.first == UInt8(ascii: "0") { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return value <= 255 ? UInt8(value) : nil
    }

    public var octets: (UInt8, UInt8, UInt8, UInt8) {
        (UInt8(truncatingIfNeeded: rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
         UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue))
    }

    public var description: String {
        let (a, b, c, d) = octets
        return "\(a).\(b).\(c).\(d)"
    }

    /// 127.0.0.0/8.
    public var isLoopback: Bool { rawValue >> 24 == 127 }

    /// 0.0.0.0.
    public var isUnspecified: Bool { rawValue == 0 }

    public static func < (lhs: IPv4Address, rhs: IPv4Address) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

func isASCIIDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
}
