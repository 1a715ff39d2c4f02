import COpenSSL
import CTLSShims

/// A certificate and its key, both PEM.
public struct PEMIdentity: Sendable, Equatable {
    public var certificatePEM: [UInt8]
    public var privateKeyPEM: [UInt8]
    /// SHA-256 over the certificate's DER encoding.
    public var sha256Fingerprint: [UInt8]
}

/// Issues EC P-256 certificates with OpenSSL's API: the self-signed default
/// identity, and test PKIs (CAs, leaves, expired certificates).
public enum CertificateMaker {
    public struct Request: Sendable {
        public var commonName: String
        public var dnsNames: [String]
        public var ipAddresses: [String]
        /// Start of validity, in seconds from now (negative for the past).
        public var validFromOffset: Int
        /// Length of validity in seconds.
        public var lifetime: Int
        public var isCertificateAuthority: Bool
        /// Signs with this CA; nil for a self-signed certificate.
        public var issuer: PEMIdentity?

        public init(
            commonName: String,
            dnsNames: [String] = [],
            ipAddresses: [String] = [],
            validFromOffset: Int = -3600,
            lifetime: Int = 10 * 365 * 24 * 3600,
            isCertificateAuthority: Bool = false,
            issuer: PEMIdentity? = nil
        ) {
            self.commonName = commonName
            self.dnsNames = dnsNames
            self.ipAddresses = ipAddresses
            self.validFromOffset = validFromOffset
            self.lifetime = lifetime
            self.isCertificateAuthority = isCertificateAuthority
            self.issuer = issuer
        }
    }

    public static func make(_ request: Request) throws(TLSError) -> PEMIdentity {
        OpenSSLErrorQueue.clear()
        guard let key = ctls_generate_ec_p256_key() else {
            throw failure("EC P-256 key generation")
        }
        defer { EVP_PKEY_free(key) }
        guard let certificate = X509_new() else { throw failure("X509_new") }
        defer { X509_free(certificate) }

        var issuerCertificate: OpaquePointer?
        var issuerKey: OpaquePointer?
        defer {
            if let issuerCertificate { X509_free(issuerCertificate) }
            if let issuerKey { EVP_PKEY_free(issuerKey) }
        }
        if let issuer = request.issuer {
            issuerCertificate = try MemoryBIO.withReadOnly(issuer.certificatePEM) { bio throws(TLSError) in
                guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else { throw failure("reading issuer certificate") }
                return cert
            }
            issuerKey = try MemoryBIO.withReadOnly(issuer.privateKeyPEM) { bio throws(TLSError) in
                guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw failure("reading issuer key") }
                return key
            }
        }

        var serial = UInt64(0)
        guard RAND_bytes(&serial, Int32(MemoryLayout<UInt64>.size)) == 1 else { throw failure("random serial") }
        let notBefore = request.validFromOffset
        guard X509_set_version(certificate, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial >> 1 | 1) == 1,
            X509_gmtime_adj(X509_getm_notBefore(certificate), notBefore) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), notBefore + request.lifetime) != nil,
            X509_set_pubkey(certificate, key) == 1,
            let subject = X509_get_subject_name(certificate),
            X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, request.commonName, -1, -1, 0) == 1
        else { throw failure("filling in the certificate") }
        let issuerName = issuerCertificate.flatMap { X509_get_subject_name($0) } ?? subject
        guard X509_set_issuer_name(certificate, issuerName) == 1 else { throw failure("setting the issuer") }

        var extensions: [(Int32, String)] = []
        if request.isCertificateAuthority {
            extensions.append((NID_basic_constraints, "critical,CA:TRUE"))
            extensions.append((NID_key_usage, "critical,keyCertSign,cRLSign"))
        } else {
            extensions.append((NID_basic_constraints, "critical,CA:FALSE"))
            extensions.append((NID_key_usage, "critical,digitalSignature"))
            extensions.append((NID_ext_key_usage, "serverAuth,clientAuth"))
        }
        let altNames = request.dnsNames.map { "DNS:\($0)" } + request.ipAddresses.map { "IP:\($0)" }
        if !altNames.isEmpty {
            extensions.append((NID_subject_alt_name, altNames.joined(separator: ",")))
        }
        extensions.append((NID_subject_key_identifier, "hash"))
        if issuerCertificate != nil {
            extensions.append((NID_authority_key_identifier, "keyid:always"))
        }
        var extensionContext = X509V3_CTX()
        X509V3_set_ctx(&extensionContext, issuerCertificate ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &extensionContext, nid, value) else {
                throw failure("certificate extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(certificate, ext, -1) == 1 else { throw failure("adding extension \(value)") }
        }

        guard X509_sign(certificate, issuerKey ?? key, EVP_sha256()) > 0 else { throw failure("signing") }
        guard let fingerprint = X509Inspection.sha256Fingerprint(certificate) else { throw failure("fingerprint") }
        return PEMIdentity(
            certificatePEM: try pem { PEM_write_bio_X509($0, certificate) },
            privateKeyPEM: try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) },
            sha256Fingerprint: fingerprint
        )
    }

    /// The SHA-256 fingerprint of the first certificate in `pem`.
    public static func sha256Fingerprint(ofPEM pem: [UInt8]) throws(TLSError) -> [UInt8] {
        try MemoryBIO.withReadOnly(pem) { bio throws(TLSError) in
            guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else { throw failure("reading certificate") }
            defer { X509_free(cert) }
            guard let fingerprint = X509Inspection.sha256Fingerprint(cert) else { throw failure("fingerprint") }
            return fingerprint
        }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws(TLSError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1, let bytes = MemoryBIO.contents(of: bio) else { throw failure("PEM encoding") }
        return bytes
    }

    private static func failure(_ step: String) -> TLSError {
        .identityStorage("\(step) failed: " + OpenSSLErrorQueue.drain(fallback: "no reason given by OpenSSL"))
    }
}
