import NIOCore

/// What a `host` may be, wherever one comes from (a peer's `open` or
/// datagram, a SOCKS request, a `-L` argument): a DNS name or an IP literal,
/// spelled so that the destination policy, the resolver and the log all read
/// the same host. A NUL, a space or a control character would let the
/// resolver see less than the policy did (`getaddrinfo` stops at a NUL,
/// `inet_aton` at a space), so none is allowed.
public enum TunnelHostSyntax {
    /// Why `host` is not a DNS name or an IP literal, or nil when it is one.
    ///
    /// - A name: labels of letters, digits, `-` and `_`, 1 to 63 bytes each,
    ///   with at most one trailing dot; IDNA names as A-labels (`xn--…`) or,
    ///   as CoreFoundation writes an app's name, as letters beyond ASCII.
    /// - An IPv4 literal is such a name too (all-digit labels); forms the
    ///   resolver reads as addresses (`127.1`) are judged by the address they
    ///   reach, after resolution.
    /// - An IPv6 literal: hex digits, `:` and `.`, optionally in brackets.
    ///   Zone indexes (`%eth0`) are not accepted.
    public static func problem(with host: String) -> String? {
        // Read in place: a String's UTF-8 view costs several times more byte by
        // byte, and every flow's open checks its host several times.
        if let verdict = host.utf8.withContiguousStorageIfAvailable({ problem(with: host, bytes: $0) }) {
            return verdict
        }
        return Array(host.utf8).withUnsafeBufferPointer { problem(with: host, bytes: $0) }
    }

    private static func problem(with host: String, bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard !bytes.isEmpty else { return "the host is empty" }
        guard bytes.count <= TunnelWireLimits.maximumHostLength else {
            return "the host is longer than \(TunnelWireLimits.maximumHostLength) bytes"
        }
        if bytes.first == UInt8(ascii: "[") || bytes.contains(UInt8(ascii: ":")) {
            return ipv6LiteralProblem(host.utf8)
        }
        return nameProblem(host, bytes: bytes)
    }

    /// Whether `host` is a DNS name or an IP literal.
    public static func isValid(_ host: String) -> Bool {
        problem(with: host) == nil
    }

    private static func ipv6LiteralProblem(_ bytes: String.UTF8View) -> String? {
        var inner = bytes[...]
        if inner.first == UInt8(ascii: "[") {
            guard inner.last == UInt8(ascii: "]"), inner.count > 2 else { return "an IPv6 literal in brackets must close them" }
            inner = inner.dropFirst().dropLast()
        }
        guard inner.contains(UInt8(ascii: ":")) else { return "only an IPv6 literal may be written in brackets" }
        guard inner.allSatisfy(isIPv6LiteralByte) else {
            return "an IPv6 literal has only hex digits, ':' and '.' (no zone index, spaces or control characters)"
        }
        // The bytes are checked above, so inet_pton reads all of them: none is cut off at a NUL.
        guard case .v6? = try? SocketAddress(ipAddress: String(decoding: inner, as: UTF8.self), port: 0) else {
            return "it has a ':' but is not an IPv6 address"
        }
        return nil
    }

    private static func nameProblem(_ host: String, bytes: UnsafeBufferPointer<UInt8>) -> String? {
        // Nearly every host is ASCII: its bytes are its scalars, with no copy and no Unicode decoding.
        if bytes.allSatisfy({ $0 < 0x80 }) {
            var name = bytes[...]
            if name.last == UInt8(ascii: ".") { name = name.dropLast() }
            return labelsProblem(name.lazy.map { Unicode.Scalar($0) })
        }
        var name = Substring(host)
        if name.hasSuffix(".") { name = name.dropLast() }
        return labelsProblem(name.unicodeScalars)
    }

    /// The labels of a name without its trailing dot.
    private static func labelsProblem(_ scalars: some Sequence<Unicode.Scalar>) -> String? {
        var labelBytes = 0
        for scalar in scalars {
            if scalar == "." {
                guard labelBytes > 0 else { return "the host has an empty label (two dots in a row, or a leading dot)" }
                labelBytes = 0
                continue
            }
            guard isNameScalar(scalar) else {
                return "a host name has only letters, digits, '-', '_' and '.' (no spaces, NUL, control or formatting characters)"
            }
            labelBytes += UTF8.width(scalar)
            guard labelBytes <= 63 else { return "a label of the host is longer than 63 bytes" }
        }
        guard labelBytes > 0 else { return "the host has an empty label (two dots in a row, or a leading dot)" }
        return nil
    }

    /// ASCII letters, digits, `-` and `_`; beyond ASCII, letters, marks and
    /// digits only (a name an app passes on before IDNA, as Apple's
    /// CoreFoundation writes it), never a space, separator, control or
    /// formatting character.
    private static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", "_": return true
            default: return false
            }
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
            return true
        default:
            return false
        }
    }

    private static func isIPv6LiteralByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
