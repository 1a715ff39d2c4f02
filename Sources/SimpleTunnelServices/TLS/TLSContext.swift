import COpenSSL
import CTLSShims
import Foundation

/// An OpenSSL `SSL_CTX` built once from a `TLSConfiguration` and shared by
/// every connection of that role.
///
/// `@unchecked Sendable`: the `SSL_CTX` is fully configured in `init` and only
/// read afterwards (`SSL_new`), which OpenSSL allows from any thread.
public final class TLSContext: @unchecked Sendable {
    public let configuration: TLSConfiguration
    let sslContext: OpaquePointer
    /// Kept alive for the verify callback, which receives it unretained.
    private let pins: PinnedFingerprints?
    /// When our certificate and (a server's) client CAs stop being valid, as read with them (`CertificateExpiry`).
    /// Set in `init` only.
    public private(set) var expiry = CertificateExpiry(certificateNotAfter: nil, clientCAs: [])

    public init(configuration: TLSConfiguration) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        let method = configuration.role == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else {
            throw .invalidConfiguration(OpenSSLErrorQueue.drain(fallback: "SSL_CTX_new failed"))
        }
        self.configuration = configuration
        self.sslContext = context
        if case .pinnedSHA256(let fingerprints) = configuration.trust, configuration.role == .client {
            self.pins = PinnedFingerprints(fingerprints)
        } else {
            self.pins = nil
        }
        // From here on, a throw runs deinit, which frees the SSL_CTX.
        try applyProtocolSettings()
        try loadIdentity()
        switch configuration.role {
        case .client: try configureServerVerification()
        case .server: try configureClientVerification()
        }
    }

    deinit {
        SSL_CTX_free(sslContext)
    }

    private func applyProtocolSettings() throws(TLSError) {
        let config = configuration
        guard ctls_SSL_CTX_set_min_proto_version(sslContext, Self.openSSLVersion(config.minimumVersion)) == 1,
            ctls_SSL_CTX_set_max_proto_version(sslContext, Self.openSSLVersion(config.maximumVersion)) == 1
        else {
            throw .invalidConfiguration(OpenSSLErrorQueue.drain(fallback: "unsupported TLS version range"))
        }
        guard SSL_CTX_set_cipher_list(sslContext, config.tls12CipherList) == 1 else {
            throw .invalidConfiguration(
                "TLS 1.2 cipher list \"\(config.tls12CipherList)\": "
                    + OpenSSLErrorQueue.drain(fallback: "no usable cipher"))
        }
        guard SSL_CTX_set_ciphersuites(sslContext, config.tls13CipherSuites) == 1 else {
            throw .invalidConfiguration(
                "TLS 1.3 cipher suites \"\(config.tls13CipherSuites)\": "
                    + OpenSSLErrorQueue.drain(fallback: "no usable suite"))
        }
        _ = SSL_CTX_set_options(sslContext, ctls_default_options())
        // A write OpenSSL could not finish is retried from a ByteBuffer whose
        // storage may have moved; tell OpenSSL that is fine.
        _ = ctls_SSL_CTX_set_mode(sslContext, Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        if config.role == .server {
            // The tunnel is one long-lived connection: no resumption, so no tickets
            // (TLS 1.3: none sent after the handshake; TLS 1.2: none in it).
            // A ticket would only be a copy of the session keys, sealed with a key that lives as long as this process.
            _ = SSL_CTX_set_num_tickets(sslContext, 0)
            _ = SSL_CTX_set_options(sslContext, ctls_no_ticket_option())
            _ = ctls_SSL_CTX_set_session_cache_mode(sslContext, Int(SSL_SESS_CACHE_OFF))
        }
    }

    private func loadIdentity() throws(TLSError) {
        let config = configuration
        switch (config.certificateChain, config.privateKey) {
        case (nil, nil):
            if config.role == .server {
                throw .invalidConfiguration("a server needs a certificate chain and a private key")
            }
        case (let chain?, let key?):
            try useCertificateChain(chain)
            try usePrivateKey(key)
            guard SSL_CTX_check_private_key(sslContext) == 1 else {
                throw .invalidConfiguration(
                    "the private key does not match the certificate: "
                        + OpenSSLErrorQueue.drain(fallback: "key mismatch"))
            }
        case (nil, _?):
            throw .invalidConfiguration("a private key was given without a certificate chain")
        case (_?, nil):
            throw .invalidConfiguration("a certificate chain was given without its private key")
        }
    }

    private func useCertificateChain(_ source: TLSConfiguration.PEMSource) throws(TLSError) {
        let (bytes, origin) = try Self.read(source, what: "certificate chain")
        let context = sslContext
        try MemoryBIO.withReadOnly(bytes) { bio throws(TLSError) in
            guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else {
                throw .invalidConfiguration(
                    "no PEM certificate in \(origin): " + OpenSSLErrorQueue.drain(fallback: "unreadable"))
            }
            defer { X509_free(leaf) }
            guard SSL_CTX_use_certificate(context, leaf) == 1 else {
                throw .invalidConfiguration(
                    "certificate in \(origin) unusable: " + OpenSSLErrorQueue.drain(fallback: "rejected"))
            }
            expiry.certificateNotAfter = X509Inspection.notAfter(leaf)
            while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
                defer { X509_free(intermediate) }
                guard ctls_SSL_CTX_add1_chain_cert(context, intermediate) == 1 else {
                    throw .invalidConfiguration(
                        "intermediate certificate in \(origin) unusable: "
                            + OpenSSLErrorQueue.drain(fallback: "rejected"))
                }
            }
            // Reading past the last certificate leaves a harmless "no start line".
            OpenSSLErrorQueue.clear()
        }
    }

    private func usePrivateKey(_ source: TLSConfiguration.PEMSource) throws(TLSError) {
        if case .file(let path) = source { try PrivateKeyFile.checkPermissions(path) }
        let (bytes, origin) = try Self.read(source, what: "private key")
        let context = sslContext
        try MemoryBIO.withReadOnly(bytes) { bio throws(TLSError) in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw .invalidConfiguration(
                    "no unencrypted PEM private key in \(origin): "
                        + OpenSSLErrorQueue.drain(fallback: "unreadable"))
            }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(context, key) == 1 else {
                throw .invalidConfiguration(
                    "private key in \(origin) unusable: " + OpenSSLErrorQueue.drain(fallback: "rejected"))
            }
        }
    }

    private func configureServerVerification() throws(TLSError) {
        switch configuration.trust {
        case .system:
            guard SSL_CTX_set_default_verify_paths(sslContext) == 1 else {
                throw .invalidConfiguration(
                    "system trust store: " + OpenSSLErrorQueue.drain(fallback: "cannot be loaded"))
            }
            SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER, nil)
        case .caFile(let path):
            try loadVerifyLocations(path)
            SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER, nil)
        case .pinnedSHA256:
            guard let pins else { return }
            SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER, nil)
            // Replaces chain building: a self-signed server is judged by its leaf alone.
            SSL_CTX_set_cert_verify_callback(
                sslContext,
                { storeContext, argument in
                    guard let storeContext, let argument else { return 0 }
                    let pins = Unmanaged<PinnedFingerprints>.fromOpaque(argument).takeUnretainedValue()
                    if let leaf = X509_STORE_CTX_get0_cert(storeContext),
                        let fingerprint = X509Inspection.sha256Fingerprint(leaf),
                        pins.contains(fingerprint)
                    {
                        return 1
                    }
                    X509_STORE_CTX_set_error(storeContext, X509_V_ERR_CERT_REJECTED)
                    return 0
                },
                Unmanaged.passUnretained(pins).toOpaque()
            )
        case .insecureNoVerification:
            SSL_CTX_set_verify(sslContext, SSL_VERIFY_NONE, nil)
        }
    }

    private func configureClientVerification() throws(TLSError) {
        guard let caFile = configuration.clientCertificateCAFile else {
            SSL_CTX_set_verify(sslContext, SSL_VERIFY_NONE, nil)
            return
        }
        try loadVerifyLocations(caFile)
        if let data = FileManager.default.contents(atPath: caFile) {
            expiry.clientCAs = X509Inspection.validities(pem: [UInt8](data))
        }
        // Tell clients which CAs we accept, so they pick the right certificate.
        if let names = SSL_load_client_CA_file(caFile) {
            SSL_CTX_set_client_CA_list(sslContext, names)
        }
        SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
    }

    private func loadVerifyLocations(_ path: String) throws(TLSError) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .invalidConfiguration("CA file \(path) does not exist or is not readable")
        }
        guard SSL_CTX_load_verify_locations(sslContext, path, nil) == 1 else {
            throw .invalidConfiguration(
                "CA file \(path): " + OpenSSLErrorQueue.drain(fallback: "no usable certificates"))
        }
    }

    private static func read(
        _ source: TLSConfiguration.PEMSource, what: String
    ) throws(TLSError) -> (bytes: [UInt8], origin: String) {
        switch source {
        case .bytes(let bytes):
            return (bytes, "the in-memory \(what)")
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .invalidConfiguration("\(what) file \(path) does not exist or is not readable")
            }
            return ([UInt8](data), "\(what) file \(path)")
        }
    }

    private static func openSSLVersion(_ version: TLSConfiguration.ProtocolVersion) -> Int32 {
        switch version {
        case .tls12: return ctls_TLS1_2_VERSION()
        case .tls13: return ctls_TLS1_3_VERSION()
        }
    }
}

/// The pinned fingerprints, boxed so the C verify callback can reach them.
private final class PinnedFingerprints: Sendable {
    private let fingerprints: [[UInt8]]

    init(_ fingerprints: [[UInt8]]) {
        self.fingerprints = fingerprints
    }

    func contains(_ fingerprint: [UInt8]) -> Bool {
        fingerprints.contains(fingerprint)
    }
}
