#if canImport(Glibc)
import Glibc
#endif

extension DatabaseLocation {
    /// What to tell the operator at start when logins and password hashes
    /// would cross a network unencrypted and unverified: nil for a Unix socket,
    /// loopback (127.0.0.0/8, ::1, localhost) or `sslmode=verify-full`.
    public var transportWarning: String? {
        guard case .tcp(let host, _) = endpoint, !verifiedTLS, !Self.isLoopback(host) else { return nil }
        return "the database at \(host) is reached without TLS, so anyone on the path can read and change logins, password hashes "
            + "and sessions; add ?sslmode=verify-full to the --database address (the database's certificate must be trusted by this machine), "
            + "or reach it through a Unix socket with ?host=/run/postgresql"
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, bare, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
    }
}
