/// The destination ports a policy rule covers: `N`, `N-M`, or a comma list
/// of those (`22,80,8000-8080`). Ports are 1...65535; 0 is never a destination.
public struct PortSet: Sendable, Hashable, CustomStringConvertible {
    public let ranges: [ClosedRange<Int>]

    public static let any = PortSet(ranges: [1...65535])

    public init(ranges: [ClosedRange<Int>]) {
        self.ranges = ranges
    }

    /// Parses the text after a rule's `:`; the error text completes "policy rule …: ".
    init(parsing text: Substring) throws(PortSetParseError) {
        var ranges: [ClosedRange<Int>] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = item.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            let low = try Self.parsePort(bounds[0], in: item)
            let high = bounds.count == 2 ? try Self.parsePort(bounds[1], in: item) : low
            guard low <= high else { throw PortSetParseError("port range \"\(item)\" runs backwards (write \(high)-\(low))") }
            ranges.append(low...high)
        }
        self.ranges = ranges
    }

    private static func parsePort(_ text: Substring, in item: Substring) throws(PortSetParseError) -> Int {
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy(isASCIIDigit),
              let port = Int(text), (1...65535).contains(port)
        else {
            let shown = item.isEmpty ? "an empty port" : "\"\(item)\""
            throw PortSetParseError("\(shown) is not a port (1 to 65535) or a range N-M")
        }
        return port
    }

    public func contains(_ port: Int) -> Bool {
        ranges.contains { $0.contains(port) }
    }

    public var description: String {
        ranges.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ",")
    }
}

struct PortSetParseError: Error {
    let problem: String
    init(_ problem: String) { self.problem = problem }
}
