/// One `Allow` or `Deny` entry: which destinations (`target`) on which ports.
///
/// Written as `TARGET[:PORTS]`; see `init(parsing:)` for the forms.
public struct DestinationRule: Sendable, Hashable, CustomStringConvertible {
    public enum Target: Sendable, Hashable {
        /// `*`: every host name and every address.
        case any
        /// An IPv4 address (as a /32) or network. IPv6 rules inside
        /// `::ffff:0:0/96` are stored here too, since mapped addresses are judged as IPv4.
        case ipv4(IPv4Network)
        case ipv6(IPv6Network)
        /// Exactly this host name (normalised: lowercase, no trailing dot).
        case hostName(String)
        /// `*.domain`: any name *below* `domain`, never `domain` itself.
        case subdomains(of: String)
    }

    public let target: Target
    public let ports: PortSet
    /// The rule as the user wrote it, for decisions and logs.
    public let text: String

    public init(target: Target, ports: PortSet = .any, text: String? = nil) {
        self.target = target
        self.ports = ports
        self.text = text ?? Self.render(target, ports)
    }

    /// Whether the rule is about addresses, so that a name can only be judged
    /// by it after resolution.
    public var isAddressRule: Bool {
        switch target {
        case .ipv4, .ipv6: return true
        case .any, .hostName, .subdomains: return false
        }
    }

    /// Whether the rule covers a host name (already normalised) on `port`.
    func matches(hostName name: String, port: Int) -> Bool {
        guard ports.contains(port) else { return false }
        switch target {
        case .any: return true
        case .hostName(let ruleName): return name == ruleName
        case .subdomains(let domain): return name.utf8.count > domain.utf8.count + 1 && name.hasSuffix("." + domain)
        case .ipv4, .ipv6: return false
        }
    }

    /// Whether the rule covers an address (already unmapped) on `port`.
    func matches(address: IPAddress, port: Int) -> Bool {
        guard ports.contains(port) else { return false }
        switch (target, address) {
        case (.any, _): return true
        case (.ipv4(let network), .v4(let candidate)): return network.contains(candidate)
        case (.ipv6(let network), .v6(let candidate)): return network.contains(candidate)
        default: return false
        }
    }

    public var description: String { text }

    private static func render(_ target: Target, _ ports: PortSet) -> String {
        let targetText: String
        switch target {
        case .any: targetText = "*"
        case .ipv4(let network): targetText = network.prefixLength == 32 ? "\(network.address)" : "\(network)"
        case .ipv6(let network): targetText = "[\(network.prefixLength == 128 ? "\(network.address)" : "\(network)")]"
        case .hostName(let name): targetText = name
        case .subdomains(let domain): targetText = "*.\(domain)"
        }
        return ports == .any ? targetText : "\(targetText):\(ports)"
    }
}
