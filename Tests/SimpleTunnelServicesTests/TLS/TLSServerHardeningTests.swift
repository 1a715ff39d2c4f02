import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("TLS: no session tickets, private keys kept private", .timeLimit(.minutes(2)))
struct TLSServerHardeningTests {
    /// `openssl s_client -tls1_2 -sess_out` against a server on `port`: its output, and the
    /// session it saved for resumption, decoded (nil when it saved none: nothing to resume).
    static func tls12Session(port: Int, directory: String) async throws -> (output: String, session: String?) {
        let sessionPath = directory + "/session-\(port).pem"
        let client = try ExternalProcess([
            "openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-sess_out", sessionPath,
        ])
        defer { client.terminate() }
        let (_, output) = await client.finish()
        guard FileManager.default.fileExists(atPath: sessionPath) else { return (output, nil) }
        let decoder = try ExternalProcess(["openssl", "sess_id", "-in", sessionPath, "-noout", "-text"])
        defer { decoder.terminate() }
        let (status, session) = await decoder.finish()
        #expect(status == 0, "\(session)")
        return (output, session)
    }

    @Test func noTLS12SessionTicketIsIssued() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // Control: s_server issues a ticket by default, and both checks below see it.
        let (sServer, sServerPort) = try await TLSInteropTests.startSServer(
            certificate: pki.certificatePath("server"), key: pki.keyPath("server"))
        defer { sServer.terminate() }
        let control = try await Self.tls12Session(port: sServerPort, directory: pki.directory)
        #expect(control.output.contains("TLS session ticket:"), "\(control.output)")
        #expect(control.session?.contains("TLS session ticket:") == true, "\(control.session ?? "no session saved")")

        let (server, _) = try await TLSInteropTests.greetingServer(pki.serverConfiguration())
        defer { server.close(promise: nil) }
        let ours = try await Self.tls12Session(port: server.port, directory: pki.directory)
        #expect(ours.output.contains("Protocol  : TLSv1.2"), "\(ours.output)")
        #expect(!ours.output.contains("TLS session ticket"), "\(ours.output)")
        // What s_client saved for resumption, if anything (with no session id it saves nothing), holds no ticket.
        #expect(ours.session.map { !$0.contains("TLS session ticket") } ?? true, "\(ours.session ?? "")")
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660])
    func aKeyOthersCanReadIsRefusedWithTheFix(mode: Int) throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let key = pki.keyPath("server")
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: key)
        do {
            _ = try TLSContext(configuration: pki.serverConfiguration())
            Issue.record("a key with mode \(String(mode, radix: 8)) was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains("UNPROTECTED PRIVATE KEY FILE"), "\(text)")
            #expect(text.contains("permissions 0\(String(mode, radix: 8))"), "\(text)")
            #expect(text.contains("chmod 600 \(key)"), "\(text)")
        }
    }

    @Test(arguments: [0o600, 0o400])
    func aKeyOnlyItsOwnerCanReadIsUsed(mode: Int) throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: pki.keyPath("server"))
        _ = try TLSContext(configuration: pki.serverConfiguration())
    }

    @Test func aGeneratedIdentityWhoseKeyWasOpenedUpIsRefused() throws {
        let directory = NSTemporaryDirectory() + "identity-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let identity = try SelfSignedIdentity.loadOrCreate(directory: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: identity.privateKeyPath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        _ = try TLSContext(configuration: identity.serverConfiguration())

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: identity.privateKeyPath)
        let reloaded = try SelfSignedIdentity.loadOrCreate(directory: directory)
        #expect(throws: TLSError.self) { try TLSContext(configuration: reloaded.serverConfiguration()) }
    }
}
