/// Why a TLS link could not be set up or ended badly. Every case carries a
/// message a user can act on; OpenSSL's own reason string is kept verbatim.
public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A certificate, key or trust file could not be used (path and OpenSSL reason).
    case invalidConfiguration(String)
    /// The handshake failed for a reason other than certificate checks.
    case handshakeFailed(reason: String)
    /// The peer's certificate did not verify (reason from X509_verify_cert_error_string).
    case certificateVerificationFailed(reason: String)
    /// The server's certificate verified but is made for other names than
    /// `expected` (the --server host, or --server-name); `certificateNames` are its own, when readable.
    case serverNameMismatch(expected: String, certificateNames: [String])
    /// The server's certificate is not the pinned one; `presented` is the one it showed (hex SHA-256).
    case pinnedCertificateMismatch(presented: String?)
    /// A client trusting the system store (no --ca, no pin) could not verify the server.
    case certificateNotTrustedBySystem(reason: String, presented: String?)
    /// The peer sent something TLS could not accept after the handshake.
    case protocolFailure(reason: String)
    /// The TCP connection ended without a TLS close_notify: data may have been cut off.
    case uncleanShutdown
    /// The channel was closed before the handshake completed.
    case closedBeforeHandshake
    /// A write arrived after the TLS link had started closing.
    case alreadyClosed
    /// The self-signed identity could not be read or stored.
    case identityStorage(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let message):
            return "TLS configuration: \(message)"
        case .handshakeFailed(let reason):
            return "TLS handshake failed: \(reason)"
        case .certificateVerificationFailed(let reason):
            return "TLS peer certificate rejected: \(reason)"
                + " (check the CA file, the host name, and the certificate's validity dates)"
        case .serverNameMismatch(let expected, let names):
            return ServerNameMismatchText.describe(expected: expected, certificateNames: names)
        case .pinnedCertificateMismatch(let presented):
            return "TLS server certificate does not match the pinned SHA-256 fingerprint"
                + (presented.map { "; it presented \($0)" } ?? "")
                + " (the server's identity changed, or this is not the server you pinned; if you trust the change, pin the new fingerprint)"
        case .certificateNotTrustedBySystem(let reason, let presented):
            return "TLS server certificate rejected: \(reason)"
                + " (the system trust store does not vouch for it: give --ca with the CA file that issued it, or --pin-sha256"
                + (presented.map { " \($0), the fingerprint it presented" } ?? " with the fingerprint tunnel-server prints at start")
                + "; or check the host name and the certificate's validity dates)"
        case .protocolFailure(let reason):
            return "TLS protocol failure: \(reason)"
        case .uncleanShutdown:
            return "TLS connection closed without close_notify; the last data may be truncated"
        case .closedBeforeHandshake:
            return "TLS connection closed before the handshake completed"
        case .alreadyClosed:
            return "TLS connection is closing; no more data can be written"
        case .identityStorage(let message):
            return "self-signed TLS identity: \(message)"
        }
    }
}
