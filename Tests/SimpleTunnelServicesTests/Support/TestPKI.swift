import Foundation
@testable import SimpleTunnelServices

/// A throwaway PKI written to a temp directory: a CA, an unrelated second CA,
/// and leaves for the cases the tests need. Generated fresh for each test.
struct TestPKI {
    let directory: String
    let ca: PEMIdentity
    let otherCA: PEMIdentity
    let server: PEMIdentity
    let expiredServer: PEMIdentity
    let wrongHostServer: PEMIdentity
    let client: PEMIdentity
    let clientFromOtherCA: PEMIdentity

    init() throws {
        directory = NSTemporaryDirectory() + "tls-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        ca = try CertificateMaker.make(.init(commonName: "SimpleTunnel Test CA", isCertificateAuthority: true))
        otherCA = try CertificateMaker.make(.init(commonName: "Unrelated CA", isCertificateAuthority: true))
        server = try CertificateMaker.make(
            .init(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], issuer: ca))
        expiredServer = try CertificateMaker.make(
            .init(
                commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"],
                validFromOffset: -30 * 24 * 3600, lifetime: 24 * 3600, issuer: ca))
        wrongHostServer = try CertificateMaker.make(
            .init(commonName: "elsewhere.example", dnsNames: ["elsewhere.example"], issuer: ca))
        client = try CertificateMaker.make(.init(commonName: "alice", issuer: ca))
        clientFromOtherCA = try CertificateMaker.make(.init(commonName: "mallory", issuer: otherCA))
        for (name, identity) in [
            ("ca", ca), ("other-ca", otherCA), ("server", server), ("expired", expiredServer),
            ("wrong-host", wrongHostServer), ("client", client), ("other-client", clientFromOtherCA),
        ] {
            try Data(identity.certificatePEM).write(to: URL(fileURLWithPath: certificatePath(name)))
            try Self.writeKey(identity.privateKeyPEM, to: keyPath(name))
        }
    }

    /// Keys are private to their owner, as the server and client insist.
    static func writeKey(_ pem: [UInt8], to path: String) throws {
        try Data(pem).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    /// Another client certificate from the test CA, for `name` (also its common name); returns `name` for the paths.
    @discardableResult
    func issueClient(_ name: String) throws -> String {
        guard !FileManager.default.fileExists(atPath: certificatePath(name)) else { return name }
        let identity = try CertificateMaker.make(.init(commonName: name, issuer: ca))
        try Data(identity.certificatePEM).write(to: URL(fileURLWithPath: certificatePath(name)))
        try Self.writeKey(identity.privateKeyPEM, to: keyPath(name))
        return name
    }

    func certificatePath(_ name: String) -> String { "\(directory)/\(name)-cert.pem" }
    func keyPath(_ name: String) -> String { "\(directory)/\(name)-key.pem" }
    var caFile: String { certificatePath("ca") }
    var otherCAFile: String { certificatePath("other-ca") }

    func serverConfiguration(_ name: String = "server", clientCA: String? = nil) -> TLSConfiguration {
        .server(
            certificateChain: .file(certificatePath(name)), privateKey: .file(keyPath(name)), clientCA: clientCA)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
