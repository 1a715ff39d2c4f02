/// An IPv6 network such as `fd00::/8`, for policy rules. Like `IPv4Network`,
/// parsing refuses an address with bits set beyond the prefix.
public struct IPv6Network: Sendable, Hashable, CustomStringConvertible {
    public let address: IPv6Address
    public let prefixLength: Int

    public init?(address: IPv6Address, prefixLength: Int) {
        guard (0...128).contains(prefixLength),
              address.rawValue & ~Self.maskBits(prefixLength) == 0
        else { return nil }
        self.address = address
        self.prefixLength = prefixLength
    }

    public init(host: IPv6Address) {
        address = host
        prefixLength = 128
    }

    /// Parses `address/n`, or a bare address as a /128.
    public init(parsing text: some StringProtocol) throws(NetworkParseError) {
        let text = Substring(text)
        let addressText = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let address = IPv6Address(addressText) else {
            throw .invalidAddress(String(addressText), family: "IPv6")
        }
        var prefixLength = 128
        if addressText.endIndex < text.endIndex {
            prefixLength = try parsePrefixLength(text[text.index(after: addressText.endIndex)...], maximum: 128)
        }
        let networkBits = address.rawValue & Self.maskBits(prefixLength)
        guard networkBits == address.rawValue else {
            throw .hostBitsSet(suggestion: "\(IPv6Address(rawValue: networkBits))/\(prefixLength)")
        }
        self.address = address
        self.prefixLength = prefixLength
    }

    public func contains(_ candidate: IPv6Address) -> Bool {
        candidate.rawValue & Self.maskBits(prefixLength) == address.rawValue
    }

    /// The same network in IPv4 terms when it lies inside `::ffff:0:0/96`
    /// (for example `::ffff:10.0.0.0/104` is `10.0.0.0/8`); nil otherwise.
    public var ipv4Mapped: IPv4Network? {
        guard prefixLength >= 96, let ipv4 = address.ipv4Mapped else { return nil }
        return IPv4Network(address: ipv4, prefixLength: prefixLength - 96)
    }

    public var description: String { "\(address)/\(prefixLength)" }

    private static func maskBits(_ prefixLength: Int) -> UInt128 {
        prefixLength == 0 ? 0 : UInt128.max << (128 - prefixLength)
    }
}
