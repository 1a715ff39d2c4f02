/// Everything needed to build a `TLSContext`, for either role.
public struct TLSConfiguration: Sendable {
    public enum Role: Sendable, Equatable {
        case client
        case server
    }

    /// PEM text, either in a file or already in memory.
    public enum PEMSource: Sendable, Equatable {
        case file(String)
        case bytes([UInt8])
    }

    /// How the client decides the server is genuine.
    public enum Trust: Sendable, Equatable {
        /// The system trust store (OpenSSL's default paths) plus the host name.
        case system
        /// Roots from a PEM CA file plus the host name.
        case caFile(String)
        /// Only a leaf certificate with one of these SHA-256 fingerprints
        /// (DER encoding); chain and host name are not checked. For self-signed servers.
        case pinnedSHA256([[UInt8]])
        /// No check at all. Tests and diagnostics only.
        case insecureNoVerification
    }

    public enum ProtocolVersion: Sendable, Equatable, Comparable {
        case tls12
        case tls13
    }

    public var role: Role
    /// Our certificate, leaf first then intermediates (server always; client for mutual TLS).
    public var certificateChain: PEMSource?
    public var privateKey: PEMSource?
    /// Client: how to verify the server.
    public var trust: Trust
    /// Server: when set, clients must present a certificate issued by a CA in this PEM file.
    public var clientCertificateCAFile: String?
    /// Client: sent as SNI and checked against the certificate (overridable per connection).
    public var serverName: String?
    /// Client: check `serverName` against the certificate. On by default.
    public var verifiesHostName: Bool
    public var minimumVersion: ProtocolVersion
    public var maximumVersion: ProtocolVersion
    /// TLS 1.2 cipher list (OpenSSL syntax). AES-GCM first: it has hardware support.
    public var tls12CipherList: String
    /// TLS 1.3 cipher suites (OpenSSL syntax).
    public var tls13CipherSuites: String

    public static let defaultTLS12CipherList =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        + "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        + "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    public static let defaultTLS13CipherSuites =
        "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

    public init(
        role: Role,
        certificateChain: PEMSource? = nil,
        privateKey: PEMSource? = nil,
        trust: Trust = .system,
        clientCertificateCAFile: String? = nil,
        serverName: String? = nil,
        verifiesHostName: Bool = true,
        minimumVersion: ProtocolVersion = .tls12,
        maximumVersion: ProtocolVersion = .tls13,
        tls12CipherList: String = TLSConfiguration.defaultTLS12CipherList,
        tls13CipherSuites: String = TLSConfiguration.defaultTLS13CipherSuites
    ) {
        self.role = role
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.trust = trust
        self.clientCertificateCAFile = clientCertificateCAFile
        self.serverName = serverName
        self.verifiesHostName = verifiesHostName
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.tls12CipherList = tls12CipherList
        self.tls13CipherSuites = tls13CipherSuites
    }

    /// A server presenting `certificateChain`; with `clientCA`, mutual TLS is required.
    public static func server(
        certificateChain: PEMSource,
        privateKey: PEMSource,
        clientCA: String? = nil
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .server,
            certificateChain: certificateChain,
            privateKey: privateKey,
            clientCertificateCAFile: clientCA
        )
    }

    /// A client verifying the server by `trust`; `certificateChain`/`privateKey` for mutual TLS.
    public static func client(
        trust: Trust,
        serverName: String? = nil,
        certificateChain: PEMSource? = nil,
        privateKey: PEMSource? = nil
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .client,
            certificateChain: certificateChain,
            privateKey: privateKey,
            trust: trust,
            serverName: serverName
        )
    }
}
