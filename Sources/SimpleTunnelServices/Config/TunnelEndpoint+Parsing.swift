extension TunnelEndpoint {
    /// Parses an endpoint as users write one: `HOST:PORT`, or `[IPv6]:PORT`.
    public init(parsing text: String) throws(TunnelEndpointParseError) {
        let host: Substring
        let port: Substring
        if case let (bracketed, rest)? = Self.bracketedHost(of: text[...]) {
            guard rest.hasPrefix(":") else { throw TunnelEndpointParseError(text: text, problem: "expected [IPv6]:PORT") }
            host = bracketed
            port = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            throw TunnelEndpointParseError(text: text, problem: "expected HOST:PORT (IPv6 as [ADDRESS]:PORT)")
        }
        guard !host.isEmpty, let number = Int(port), (1...65535).contains(number) else {
            throw TunnelEndpointParseError(text: text, problem: "expected HOST:PORT with a port from 1 to 65535")
        }
        self.init(host: String(host), port: number)
    }

    /// `[HOST]REST`: the host inside the brackets and what follows them; nil
    /// unless `text` starts with `[` and has a `]`.
    static func bracketedHost(of text: Substring) -> (host: Substring, rest: Substring)? {
        guard text.hasPrefix("["), let close = text.firstIndex(of: "]") else { return nil }
        return (text[text.index(after: text.startIndex)..<close], text[text.index(after: close)...])
    }

    /// A host without the brackets an IPv6 literal may be written in (`[::1]` is `::1`).
    static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2 ? String(host.dropFirst().dropLast()) : host
    }
}

/// An endpoint that is not `HOST:PORT` or `[IPv6]:PORT`.
public struct TunnelEndpointParseError: Error, Hashable, CustomStringConvertible {
    public var text: String
    /// What was expected instead, such as "expected HOST:PORT with a port from 1 to 65535".
    public var problem: String

    public var description: String { "\(text): \(problem)" }
}
