/// Networks of either family, written `CIDR[,CIDR…]` (`192.168.1.0/24,fd00:1::/64`),
/// for deciding which peers may connect. A bare address is a single host.
/// IPv4-mapped IPv6 networks are kept as the IPv4 networks they are, and an
/// address is judged unmapped, so a dual-stack socket's IPv4 peer matches an IPv4 entry.
public struct IPNetworkList: Sendable, Hashable, CustomStringConvertible {
    public private(set) var ipv4: [IPv4Network] = []
    public private(set) var ipv6: [IPv6Network] = []

    public init(ipv4: [IPv4Network] = [], ipv6: [IPv6Network] = []) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    public init(parsing text: String) throws(IPNetworkListError) {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
        for written in entries {
            // "a, b" as people write lists.
            var entry = written
            while entry.first == " " { entry.removeFirst() }
            while entry.last == " " { entry.removeLast() }
            guard !entry.isEmpty else { throw IPNetworkListError(text: text, entry: nil) }
            do throws(NetworkParseError) {
                if entry.contains(":") {
                    let network = try IPv6Network(parsing: entry)
                    if let mapped = network.ipv4Mapped { ipv4.append(mapped) } else { ipv6.append(network) }
                } else {
                    ipv4.append(try IPv4Network(parsing: entry))
                }
            } catch {
                throw IPNetworkListError(text: text, entry: String(entry), problem: error)
            }
        }
    }

    public var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

    public func contains(_ address: IPAddress) -> Bool {
        switch address.unmapped {
        case .v4(let v4): return ipv4.contains { $0.contains(v4) }
        case .v6(let v6): return ipv6.contains { $0.contains(v6) }
        }
    }

    public var description: String {
        (ipv4.map(\.description) + ipv6.map(\.description)).joined(separator: ",")
    }
}

/// Why a `CIDR[,CIDR…]` list does not parse; completes "--option: …".
public struct IPNetworkListError: Error, Hashable, CustomStringConvertible {
    public let text: String
    /// The entry that failed; nil for an empty one (`a,,b` or nothing at all).
    public let entry: String?
    public let problem: NetworkParseError?

    init(text: String, entry: String?, problem: NetworkParseError? = nil) {
        self.text = text
        self.entry = entry
        self.problem = problem
    }

    public var description: String {
        let expected = "expected networks such as 192.168.1.0/24,fd00:1::/64"
        guard let entry, let problem else { return "\"\(text)\" has an empty entry: \(expected)" }
        return "\"\(entry)\": \(problem); \(expected)"
    }
}
