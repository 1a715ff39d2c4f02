/// Host names as the policy compares them: lowercased, without the trailing
/// dot of a fully qualified name (`DB.Internal.` and `db.internal` are one host).
enum HostName {
    /// ASCII letters only are folded, as DNS folds them: Unicode folding would
    /// make a rule for `key.example.com` match a host spelled with the Kelvin
    /// sign, which the resolver looks up as another name.
    static func normalised(_ name: some StringProtocol) -> String {
        let hasCapital = name.utf8.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        var name = hasCapital ? String(decoding: name.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self) : String(name)
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// Why `name` (already normalised) cannot be a host name in a rule, or nil
    /// when it is fine: labels of letters, digits, `-` and `_`, 1 to 63 bytes
    /// each, 253 in all, and a last label that is not all digits (that would be
    /// a mistyped IPv4 address).
    static func problem(with name: String) -> String? {
        guard !name.isEmpty else { return "the host name is empty" }
        guard name.utf8.count <= 253 else { return "the host name is longer than 253 bytes" }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count) else {
                return label.isEmpty ? "the host name has an empty label (two dots in a row?)" : "label \"\(label)\" is longer than 63 bytes"
            }
            guard label.utf8.allSatisfy(isHostNameByte) else {
                return "\"\(label)\" has characters a host name cannot have (letters, digits, '-' and '_' only)"
            }
        }
        if let last = labels.last, last.utf8.allSatisfy(isASCIIDigit) {
            return "it is neither a valid IPv4 address nor a host name"
        }
        return nil
    }

    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}
