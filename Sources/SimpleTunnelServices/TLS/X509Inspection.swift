import COpenSSL
import CTLSShims
import Foundation

/// Read-only facts about an OpenSSL `X509 *`, as Swift values.
enum X509Inspection {
    /// SHA-256 over the certificate's DER encoding: what `--pin-sha256` compares.
    static func sha256Fingerprint(_ certificate: OpaquePointer) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else { return nil }
        return Array(digest.prefix(Int(length)))
    }

    /// The subject as an RFC 2253 string, e.g. "CN=alice,O=Example".
    static func subject(_ certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, ctls_XN_FLAG_RFC2253()) >= 0 else { return nil }
        return MemoryBIO.contents(of: bio).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The DNS names and IP addresses the certificate is for (subjectAltName),
    /// at most `limit`, each printable ASCII: they come from the peer and end up in messages.
    static func alternativeNames(_ certificate: OpaquePointer, limit: Int = 8) -> [String] {
        guard let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        guard ctls_x509_write_alt_names(certificate, bio) == 1, let bytes = MemoryBIO.contents(of: bio) else { return [] }
        let names = bytes.split(separator: UInt8(ascii: "\n")).filter { name in
            name.count <= 253 && name.allSatisfy { (0x21...0x7e).contains($0) }
        }
        return names.prefix(limit).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The end of the certificate's validity (notAfter).
    static func notAfter(_ certificate: OpaquePointer) -> Date? {
        guard let time = X509_get0_notAfter(certificate) else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// Every certificate in PEM `bytes` (a CA file), with its subject and end of validity; what is not a certificate is skipped.
    static func validities(pem bytes: [UInt8]) -> [CertificateValidity] {
        let found = try? MemoryBIO.withReadOnly(bytes) { bio throws(TLSError) -> [CertificateValidity] in
            var found: [CertificateValidity] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                defer { X509_free(certificate) }
                if let notAfter = notAfter(certificate) {
                    found.append(CertificateValidity(subject: subject(certificate) ?? "unknown subject", notAfter: notAfter))
                }
            }
            // Reading past the last certificate leaves a harmless "no start line".
            OpenSSLErrorQueue.clear()
            return found
        }
        return found ?? []
    }
}
