import Foundation

/// The embedded default server identity: an EC P-256 key and self-signed
/// certificate kept in a state directory, so the fingerprint clients pin
/// stays the same across restarts.
public struct SelfSignedIdentity: Sendable {
    public static let certificateFileName = "server-cert.pem"
    public static let privateKeyFileName = "server-key.pem"

    public let directory: String
    public let certificatePath: String
    public let privateKeyPath: String
    public let sha256Fingerprint: [UInt8]
    /// True when this call created the files (first start).
    public let wasCreated: Bool

    /// Lowercase hex, as `--pin-sha256` takes it.
    public var sha256FingerprintHex: String { HexEncoding.encode(sha256Fingerprint) }

    /// `$XDG_STATE_HOME/simpletunnel`, else `~/.local/state/simpletunnel`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/simpletunnel"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/state/simpletunnel"
    }

    /// Loads the identity from `directory`, creating it the first time.
    /// `hostNames` go into the certificate's subjectAltName on creation.
    public static func loadOrCreate(
        directory: String = SelfSignedIdentity.defaultDirectory(),
        hostNames: [String] = ["localhost"]
    ) throws(TLSError) -> SelfSignedIdentity {
        let certificatePath = directory + "/" + certificateFileName
        let keyPath = directory + "/" + privateKeyFileName
        let files = FileManager.default
        if files.fileExists(atPath: certificatePath), files.fileExists(atPath: keyPath) {
            guard let pem = files.contents(atPath: certificatePath) else {
                throw .identityStorage("\(certificatePath) is not readable")
            }
            return SelfSignedIdentity(
                directory: directory, certificatePath: certificatePath, privateKeyPath: keyPath,
                sha256Fingerprint: try CertificateMaker.sha256Fingerprint(ofPEM: [UInt8](pem)),
                wasCreated: false)
        }

        let names = hostNames.filter { IPAddress($0) == nil }
        let addresses = ["127.0.0.1", "::1"] + hostNames.filter { IPAddress($0) != nil }
        let identity = try CertificateMaker.make(
            .init(commonName: names.first ?? "simpletunnel", dnsNames: names, ipAddresses: addresses))
        do {
            try files.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .identityStorage("cannot create the state directory \(directory): \(error)")
        }
        // Key first, each written whole then renamed: a crash never leaves half a file,
        // and the certificate (checked first on load) only appears once the key is there.
        try writeAtomically(identity.privateKeyPEM, to: keyPath, permissions: 0o600)
        try writeAtomically(identity.certificatePEM, to: certificatePath, permissions: 0o644)
        return SelfSignedIdentity(
            directory: directory, certificatePath: certificatePath, privateKeyPath: keyPath,
            sha256Fingerprint: identity.sha256Fingerprint, wasCreated: true)
    }

    /// A server configuration presenting this identity.
    public func serverConfiguration(clientCA: String? = nil) -> TLSConfiguration {
        .server(certificateChain: .file(certificatePath), privateKey: .file(privateKeyPath), clientCA: clientCA)
    }

    private static func writeAtomically(_ bytes: [UInt8], to path: String, permissions: mode_t) throws(TLSError) {
        do {
            try AtomicFile.write(bytes, to: path, permissions: permissions)
        } catch {
            throw .identityStorage(error.description)
        }
    }
}
