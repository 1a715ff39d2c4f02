/// One `-L` or `-U` argument, as `ssh -L` spells it: `[BIND:]LPORT:HOST:PORT`,
/// IPv6 addresses in brackets (`[::1]:8080:[2001:db8::1]:80`).
public struct ForwardSpecification: Sendable, Hashable, CustomStringConvertible {
    public var bindHost: String
    public var bindPort: Int
    public var destination: TunnelEndpoint

    public static let defaultBindHost = "127.0.0.1"

    public init(bindHost: String = defaultBindHost, bindPort: Int, destination: TunnelEndpoint) {
        self.bindHost = bindHost
        self.bindPort = bindPort
        self.destination = destination
    }

    public init(parsing text: String) throws(ForwardSpecificationError) {
        let fields = try Self.fields(of: text)
        let bindHost: String
        let rest: ArraySlice<String>
        switch fields.count {
        case 3:
            bindHost = Self.defaultBindHost
            rest = fields[...]
        case 4:
            bindHost = fields[0]
            rest = fields.dropFirst()
        default:
            throw ForwardSpecificationError(text: text, reason: "expected [BIND:]LPORT:HOST:PORT")
        }
        let values = Array(rest)
        guard let bindPort = Int(values[0]), (0...65535).contains(bindPort) else {
            throw ForwardSpecificationError(text: text, reason: "local port \"\(values[0])\" is not a number from 0 to 65535")
        }
        guard let port = Int(values[2]), (1...65535).contains(port) else {
            throw ForwardSpecificationError(text: text, reason: "destination port \"\(values[2])\" is not a number from 1 to 65535")
        }
        if let problem = TunnelHostSyntax.problem(with: values[1]) {
            throw ForwardSpecificationError(text: text, reason: "the destination host is not a DNS name or an IP literal: \(problem)")
        }
        guard !bindHost.isEmpty else {
            throw ForwardSpecificationError(text: text, reason: "the bind address is empty")
        }
        self.init(bindHost: bindHost, bindPort: bindPort, destination: TunnelEndpoint(host: values[1], port: port))
    }

    /// Splits on colons outside brackets, dropping the brackets.
    private static func fields(of text: String) throws(ForwardSpecificationError) -> [String] {
        var fields: [String] = []
        var current = ""
        var inBrackets = false
        for character in text {
            switch character {
            case "[" where !inBrackets && current.isEmpty:
                inBrackets = true
            case "]" where inBrackets:
                inBrackets = false
            case ":" where !inBrackets:
                fields.append(current)
                current = ""
            default:
                current.append(character)
            }
        }
        guard !inBrackets else {
            throw ForwardSpecificationError(text: text, reason: "a [ has no matching ]")
        }
        fields.append(current)
        return fields
    }

    public var description: String {
        "\(TunnelEndpoint(host: bindHost, port: bindPort)) -> \(destination)"
    }
}

public struct ForwardSpecificationError: Error, Hashable, CustomStringConvertible {
    public var text: String
    public var reason: String

    public var description: String { "\"\(text)\": \(reason)" }
}
