import COpenSSL

/// Incremental SHA-256 (OpenSSL EVP) for checking bulk transfers.
final class SHA256Hasher {
    private let context: OpaquePointer

    init() {
        // Test-only: allocation failure of a digest context is not a case worth handling.
        context = EVP_MD_CTX_new()!
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest
    }
}

/// A deterministic stream: a random 1 MiB block repeated, each copy stamped
/// with its index, so a lost, duplicated or reordered chunk changes the digest.
struct BulkPattern: Sendable {
    static let chunkSize = 1 << 20
    private let block: [UInt8]

    init() {
        var block = [UInt8](repeating: 0, count: Self.chunkSize)
        RAND_bytes(&block, Int32(block.count))
        self.block = block
    }

    func chunk(_ index: Int) -> [UInt8] {
        var chunk = block
        withUnsafeBytes(of: UInt64(index).littleEndian) { stamp in
            for i in 0..<stamp.count { chunk[i] = stamp[i] }
        }
        return chunk
    }

    func digest(chunks: Int) -> [UInt8] {
        let hasher = SHA256Hasher()
        for index in 0..<chunks {
            chunk(index).withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finish()
    }
}
