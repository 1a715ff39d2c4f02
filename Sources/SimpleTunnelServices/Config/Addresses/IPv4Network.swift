/// An IPv4 network: an address whose bits beyond `prefixLength` are zero.
///
/// Parsing refuses host bits (`10.1.0.0/8`) rather than silently masking
/// them: in a route or a policy rule they are almost always a typo, and the
/// error suggests the network that was probably meant.
public struct IPv4Network: Sendable, Hashable, CustomStringConvertible {
    public let address: IPv4Address
    public let prefixLength: Int

    /// Nil when `prefixLength` is outside 0...32 or `address` has host bits set.
    public init?(address: IPv4Address, prefixLength: Int) {
        guard (0...32).contains(prefixLength),
              address.rawValue & ~Self.maskBits(prefixLength) == 0
        else { return nil }
        self.address = address
        self.prefixLength = prefixLength
    }

    /// A single address as a /32 network.
    public init(host: IPv4Address) {
        address = host
        prefixLength = 32
    }

    /// Parses `a.b.c.d/n`, or a bare address as a /32.
    public init(parsing text: some StringProtocol) throws(NetworkParseError) {
        let text = Substring(text)
        let addressText = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let address = IPv4Address(addressText) else {
            throw .invalidAddress(String(addressText), family: "IPv4")
        }
        var prefixLength = 32
        if addressText.endIndex < text.endIndex {
            prefixLength = try parsePrefixLength(text[text.index(after: addressText.endIndex)...], maximum: 32)
        }
        try self.init(checking: address, prefixLength: prefixLength)
    }

    /// Parses an address and a dotted netmask, as routes are written in the
    /// configuration (`Address` = "10.0.0.0", `Netmask` = "255.0.0.0").
    public init(address addressText: some StringProtocol, netmask netmaskText: some StringProtocol) throws(NetworkParseError) {
        guard let address = IPv4Address(addressText) else {
            throw .invalidAddress(String(addressText), family: "IPv4")
        }
        guard let netmask = IPv4Address(netmaskText) else {
            throw .invalidAddress(String(netmaskText), family: "IPv4")
        }
        let hostBits = ~netmask.rawValue
        // Contiguous means the zero bits form one run at the end: hostBits is 2^k - 1.
        guard hostBits & (hostBits &+ 1) == 0 else {
            throw .nonContiguousNetmask(netmask.description)
        }
        try self.init(checking: address, prefixLength: netmask.rawValue.nonzeroBitCount)
    }

    private init(checking address: IPv4Address, prefixLength: Int) throws(NetworkParseError) {
        let networkBits = address.rawValue & Self.maskBits(prefixLength)
        guard networkBits == address.rawValue else {
            throw .hostBitsSet(suggestion: "\(IPv4Address(rawValue: networkBits))/\(prefixLength)")
        }
        self.address = address
        self.prefixLength = prefixLength
    }

    public var netmask: IPv4Address { IPv4Address(rawValue: Self.maskBits(prefixLength)) }

    public func contains(_ candidate: IPv4Address) -> Bool {
        candidate.rawValue & Self.maskBits(prefixLength) == address.rawValue
    }

    public var description: String { "\(address)/\(prefixLength)" }

    static func maskBits(_ prefixLength: Int) -> UInt32 {
        prefixLength == 0 ? 0 : UInt32.max << (32 - prefixLength)
    }
}
