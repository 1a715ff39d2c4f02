/// A value from the configuration together with its key path, so that every
/// check can throw an error naming where the value sits.
struct ConfigurationNode {
    let value: PropertyListValue
    let keyPath: ConfigurationKeyPath

    func invalid(expected: String, detail: String? = nil) -> ConfigurationError {
        .invalidValue(keyPath, value: value.renderedForConfigurationError, expected: expected, detail: detail)
    }

    func dictionary() throws(ConfigurationError) -> ConfigurationDictionary {
        guard case .dictionary(let entries) = value else { throw invalid(expected: "a dictionary") }
        return ConfigurationDictionary(entries: entries, keyPath: keyPath)
    }

    func array(of expected: String) throws(ConfigurationError) -> [ConfigurationNode] {
        guard case .array(let elements) = value else { throw invalid(expected: "an array of \(expected)") }
        return elements.enumerated().map { ConfigurationNode(value: $1, keyPath: keyPath.appending(index: $0)) }
    }

    func string(expected: String = "a string") throws(ConfigurationError) -> String {
        guard case .string(let text) = value else { throw invalid(expected: expected) }
        return text
    }

    func boolean(expected: String = "true or false") throws(ConfigurationError) -> Bool {
        guard case .boolean(let value) = value else { throw invalid(expected: expected) }
        return value
    }

    func nonEmptyString(expected: String) throws(ConfigurationError) -> String {
        let text = try string(expected: expected)
        guard !text.isEmpty else { throw invalid(expected: expected) }
        return text
    }

    func ipv4Address() throws(ConfigurationError) -> IPv4Address {
        let expected = "an IPv4 address such as 192.168.2.2"
        guard let address = IPv4Address(try string(expected: expected)) else { throw invalid(expected: expected) }
        return address
    }

    func ipv6Address() throws(ConfigurationError) -> IPv6Address {
        let expected = "an IPv6 address such as fd00:90::2"
        guard let address = IPv6Address(try string(expected: expected)) else { throw invalid(expected: expected) }
        return address
    }

    func ipAddress() throws(ConfigurationError) -> IPAddress {
        let expected = "an IPv4 or IPv6 address such as 192.168.2.1 or fd00::1"
        guard let address = IPAddress(try string(expected: expected)) else { throw invalid(expected: expected) }
        return address
    }

    /// An integer within `range`; the message states the range.
    func integer(in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let expected = "an integer from \(range.lowerBound) to \(range.upperBound)"
        guard case .integer(let wide) = value, let narrow = Int(exactly: wide), range.contains(narrow) else {
            throw invalid(expected: expected)
        }
        return narrow
    }

    /// A limit on a count: at least 1, at most `maximum`.
    func positiveInteger(maximum: Int) throws(ConfigurationError) -> Int {
        let expected = "a positive integer (1 to \(maximum))"
        guard case .integer(let wide) = value, let narrow = Int(exactly: wide), (1...maximum).contains(narrow) else {
            throw invalid(expected: expected)
        }
        return narrow
    }

    /// A rate or size above zero and at most `maximum`, integer or real.
    func positiveNumber(maximum: Double, unit: String) throws(ConfigurationError) -> Double {
        let expected = "a positive number of \(unit) (above 0, at most \(Int(maximum)))"
        let number: Double
        switch value {
        case .integer(let wide): number = Double(wide)
        case .real(let real): number = real
        default: throw invalid(expected: expected)
        }
        guard number > 0, number <= maximum else { throw invalid(expected: expected) }
        return number
    }

    /// A timeout written as a number of seconds, integer or real, above zero
    /// and at most `maximum` (so it always fits a `Duration`).
    /// `allowsZero`: 0 is taken too (a timeout that is off).
    func seconds(maximum: Double, allowsZero: Bool = false) throws(ConfigurationError) -> Duration {
        let expected = (allowsZero ? "0 or a positive number of seconds" : "a positive number of seconds") + " (at most \(Int(maximum)))"
        let seconds: Double
        switch value {
        case .integer(let wide): seconds = Double(wide)
        case .real(let real): seconds = real
        default: throw invalid(expected: expected)
        }
        guard allowsZero ? seconds >= 0 : seconds > 0, seconds <= maximum else { throw invalid(expected: expected) }
        return .seconds(seconds)
    }
}

/// A dictionary from the configuration, with lookups that name their key path.
struct ConfigurationDictionary {
    let entries: [String: PropertyListValue]
    let keyPath: ConfigurationKeyPath

    func optional(_ key: String) -> ConfigurationNode? {
        entries[key].map { ConfigurationNode(value: $0, keyPath: keyPath.appending(key)) }
    }

    func required(_ key: String, expected: String) throws(ConfigurationError) -> ConfigurationNode {
        guard let node = optional(key) else { throw .missingKey(keyPath.appending(key), expected: expected) }
        return node
    }

    /// Refuses any key outside `known`, suggesting the closest known key so a typo is easy to spot.
    func rejectUnknownKeys(_ known: [String]) throws(ConfigurationError) {
        for key in entries.keys.sorted() where !known.contains(key) {
            throw .unknownKey(keyPath.appending(key), suggestion: closestKey(to: key, among: known), known: known)
        }
    }
}

extension PropertyListValue {
    /// The value as an error message shows it: strings quoted (and shortened),
    /// numbers as written, containers by kind only.
    var renderedForConfigurationError: String {
        switch self {
        case .string(let text):
            let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
            return shown.debugDescription
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .boolean(let value): return value ? "true" : "false"
        case .data(let bytes): return "data (\(bytes.readableBytes) bytes)"
        case .date: return "a date"
        case .uid: return "a keyed-archiver reference"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        }
    }
}
