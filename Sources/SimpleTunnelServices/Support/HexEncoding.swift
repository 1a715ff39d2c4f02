/// Lowercase hex without separators, the form `--pin-sha256` takes.
public enum HexEncoding {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Accepts upper or lower case and optional ':' separators; nil if not hex.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = text.utf8.filter { $0 != UInt8(ascii: ":") }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var high: UInt8?
        for c in digits {
            guard let value = hexDigitValue(c) else { return nil }
            if let h = high { out.append(h << 4 | value); high = nil } else { high = value }
        }
        return out
    }
}

func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}
