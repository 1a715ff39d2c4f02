import COpenSSL
import CTLSShims

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
}

/// Bytes in and out of OpenSSL memory BIOs.
enum MemoryBIO {
    /// Everything written to a memory BIO so far.
    static func contents(of bio: OpaquePointer) -> [UInt8]? {
        var data: UnsafeMutablePointer<CChar>?
        let length = ctls_BIO_get_mem_data(bio, &data)
        guard length >= 0 else { return nil }
        guard let data, length > 0 else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// A read-only BIO over `bytes`, valid while `body` runs.
    static func withReadOnly<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws(TLSError) -> T) throws(TLSError) -> T {
        let result: Result<T, TLSError> = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                return .failure(.invalidConfiguration("out of memory reading PEM"))
            }
            defer { BIO_free(bio) }
            do throws(TLSError) { return .success(try body(bio)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// Lowercase hex without separators, the form `--pin-sha256` takes.
public enum HexEncoding {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Accepts upper or lower case and optional ':' separators; nil if not hex.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = text.utf8.filter { $0 != UInt8(ascii: ":") }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var high: UInt8?
        for c in digits {
            let value: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | value); high = nil } else { high = value }
        }
        return out
    }
}
