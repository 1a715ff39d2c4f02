/// Why text is not a network (`address/prefix`, or an address and netmask pair).
/// The description completes a sentence such as "expected a network, got …: <description>".
public enum NetworkParseError: Error, Hashable, CustomStringConvertible {
    case invalidAddress(String, family: String)
    case invalidPrefixLength(String, maximum: Int)
    case nonContiguousNetmask(String)
    /// The address has bits set beyond the prefix; `suggestion` is the network it probably meant.
    case hostBitsSet(suggestion: String)

    public var description: String {
        switch self {
        case .invalidAddress(let text, let family):
            return "\"\(text)\" is not an \(family) address"
        case .invalidPrefixLength(let text, let maximum):
            return "prefix length \"\(text)\" is not a number from 0 to \(maximum)"
        case .nonContiguousNetmask(let text):
            return "netmask \(text) is not contiguous (its one bits must all come first, as in 255.255.0.0)"
        case .hostBitsSet(let suggestion):
            return "the address has bits set beyond the prefix (did you mean \(suggestion)?)"
        }
    }
}

/// Parses the decimal prefix length after a `/`: digits only, no sign, at most `maximum`.
func parsePrefixLength(_ text: Substring, maximum: Int) throws(NetworkParseError) -> Int {
    guard (1...3).contains(text.utf8.count), text.utf8.allSatisfy(isASCIIDigit),
          let value = Int(text), value <= maximum
    else {
        throw .invalidPrefixLength(String(text), maximum: maximum)
    }
    return value
}
