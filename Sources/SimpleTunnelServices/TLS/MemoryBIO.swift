import COpenSSL
import CTLSShims

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
