import COpenSSL

/// A salted slow hash of a password, stored with its parameters:
/// `pbkdf2-sha256$ITERATIONS$SALT_HEX$HASH_HEX` (PBKDF2-HMAC-SHA256 from OpenSSL).
public struct PasswordHash: Sendable, Hashable, CustomStringConvertible {
    public static let scheme = "pbkdf2-sha256"
    /// Fewer iterations than this are refused when reading a users file.
    public static let minimumIterations = 100_000
    public static let defaultIterations = 210_000

    public let iterations: Int
    public let salt: [UInt8]
    public let hash: [UInt8]

    /// Hashes `password` with a fresh random salt.
    public init(password: String, iterations: Int = PasswordHash.defaultIterations) throws(PasswordHashError) {
        guard iterations >= Self.minimumIterations else { throw .tooFewIterations(iterations) }
        var salt = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&salt, Int32(salt.count)) == 1 else { throw .noRandomness }
        self.iterations = iterations
        self.salt = salt
        self.hash = try Self.derive(password: password, salt: salt, iterations: iterations)
    }

    init(iterations: Int, salt: [UInt8], hash: [UInt8]) {
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// Reads the stored form.
    public init(parsing text: some StringProtocol) throws(PasswordHashError) {
        let fields = text.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == Self.scheme else { throw .unrecognizedFormat }
        guard let iterations = Int(fields[1]) else { throw .unrecognizedFormat }
        guard iterations >= Self.minimumIterations else { throw .tooFewIterations(iterations) }
        guard let salt = HexEncoding.decode(String(fields[2])), salt.count >= 8,
            let hash = HexEncoding.decode(String(fields[3])), hash.count == 32
        else { throw .unrecognizedFormat }
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// Whether `password` is the one hashed here, compared in constant time.
    public func matches(_ password: String) -> Bool {
        guard let candidate = try? Self.derive(password: password, salt: salt, iterations: iterations) else { return false }
        return CRYPTO_memcmp(candidate, hash, hash.count) == 0
    }

    public var description: String {
        "\(Self.scheme)$\(iterations)$\(HexEncoding.encode(salt))$\(HexEncoding.encode(hash))"
    }

    private static func derive(password: String, salt: [UInt8], iterations: Int) throws(PasswordHashError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let bytes = Array(password.utf8)
        // A hand-edited count beyond what OpenSSL takes fails the check rather than the process.
        guard let rounds = Int32(exactly: iterations), let length = Int32(exactly: bytes.count) else { throw .derivationFailed }
        let status = PKCS5_PBKDF2_HMAC(bytes, length, salt, Int32(salt.count), rounds, EVP_sha256(), Int32(output.count), &output)
        guard status == 1 else { throw .derivationFailed }
        return output
    }
}

public enum PasswordHashError: Error, Hashable, CustomStringConvertible {
    case unrecognizedFormat
    case tooFewIterations(Int)
    case noRandomness
    case derivationFailed

    public var description: String {
        switch self {
        case .unrecognizedFormat:
            return "expected \(PasswordHash.scheme)$ITERATIONS$SALT_HEX$HASH_HEX (write entries with `tunnel-server passwd LOGIN`)"
        case .tooFewIterations(let count):
            return "\(count) PBKDF2 iterations is too few to slow down guessing; at least \(PasswordHash.minimumIterations)"
        case .noRandomness:
            return "OpenSSL could not provide random bytes for a salt"
        case .derivationFailed:
            return "OpenSSL could not derive the password hash"
        }
    }
}
