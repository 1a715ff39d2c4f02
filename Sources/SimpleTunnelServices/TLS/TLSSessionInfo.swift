/// What the handshake settled, for logs and authorisation decisions.
public struct TLSSessionInfo: Sendable, Equatable {
    /// "TLSv1.3" or "TLSv1.2".
    public var protocolVersion: String
    /// OpenSSL's name, e.g. "TLS_AES_128_GCM_SHA256".
    public var cipher: String
    /// The host name the client asked for (SNI), if any.
    public var serverName: String?
    /// The peer's subject (RFC 2253), if it presented a certificate.
    public var peerCertificateSubject: String?
    /// SHA-256 over the peer certificate's DER encoding.
    public var peerCertificateSHA256: [UInt8]?
    /// True when the peer's certificate was checked (CA, host name or pin) and passed.
    /// A server with mutual TLS can authorise on `peerCertificateSubject` only when this holds.
    public var peerCertificateVerified: Bool
}

/// Sent inbound by `TLSHandler` once a handshake completes (after
/// `TLSUserEvent.handshakeCompleted`), so that handlers further on learn what
/// was settled without looking for the TLS handler in the pipeline.
public struct TLSSessionEstablishedEvent: Sendable {
    public let session: TLSSessionInfo
}
