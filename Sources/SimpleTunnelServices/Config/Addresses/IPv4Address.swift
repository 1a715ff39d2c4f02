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
        // One pass over the bytes, with no array of parts: every flow's open
        // parses its host several times (the policy's two stages, the resolver).
        var value: UInt32 = 0
        var octetCount = 0
        var octet = Octet()
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard octetCount < 3, let finished = octet.value else { return nil }
                value = value << 8 | UInt32(finished)
                octetCount += 1
                octet = Octet()
            } else {
                guard octet.append(byte) else { return nil }
            }
        }
        guard octetCount == 3, let last = octet.value else { return nil }
        rawValue = value << 8 | UInt32(last)
    }

    /// One to three ASCII digits, no leading zero unless the octet is `0`, at most 255.
    private struct Octet {
        private var number = 0
        private var digits = 0
        private var leadingZero = false

        /// False for a byte that is not a digit, or a fourth digit.
        mutating func append(_ byte: UInt8) -> Bool {
            guard isASCIIDigit(byte), digits < 3 else { return false }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            return true
        }

        var value: UInt8? {
            guard digits > 0, !(digits > 1 && leadingZero), number <= 255 else { return nil }
            return UInt8(number)
        }
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
