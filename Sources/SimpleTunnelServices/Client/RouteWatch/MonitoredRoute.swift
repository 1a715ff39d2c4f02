/// A route added to the main table, as one line of `ip monitor route` says it.
/// Lines that cannot send traffic around the tunnel parse to nil: deletions,
/// other tables (local, broadcast), and routes that deliver nothing
/// (blackhole, unreachable, prohibit, throw) or nothing unicast.
struct MonitoredRoute: Equatable, Sendable {
    var destination: IPNetworkChoice
    var device: String?
    var gateway: String?

    private static let ignoredTypes: Set<Substring> = [
        "local", "broadcast", "multicast", "anycast", "blackhole", "unreachable", "prohibit", "throw", "nat",
    ]

    init(destination: IPNetworkChoice, device: String?, gateway: String?) {
        self.destination = destination
        self.device = device
        self.gateway = gateway
    }

    init?(line: some StringProtocol) {
        var words = line.split(separator: " ", omittingEmptySubsequences: true).map { Substring($0) }
        guard let first = words.first, first != "Deleted" else { return nil }
        if Self.ignoredTypes.contains(first) { return nil }
        if first == "unicast" { words.removeFirst() }
        // `default` (a /0) never beats a tunnel's routes; nothing else here is a name.
        guard let target = words.first, target != "default", let destination = try? IPNetworkChoice(parsing: String(target)) else { return nil }
        func value(after key: Substring) -> Substring? {
            guard let index = words.firstIndex(of: key), index + 1 < words.count else { return nil }
            return words[index + 1]
        }
        if let table = value(after: "table"), table != "main" { return nil }
        self.init(destination: destination, device: value(after: "dev").map(String.init), gateway: value(after: "via").map(String.init))
    }
}
