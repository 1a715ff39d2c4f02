import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("TLS: self-signed default identity", .timeLimit(.minutes(2)))
struct TLSSelfSignedIdentityTests {
    @Test func stateDirectoryFollowsXDGThenHome() {
        #expect(SelfSignedIdentity.defaultDirectory(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"])
            == "/x/state/simpletunnel")
        #expect(SelfSignedIdentity.defaultDirectory(environment: ["HOME": "/home/u"])
            == "/home/u/.local/state/simpletunnel")
        // A relative XDG_STATE_HOME is invalid per the spec and ignored.
        #expect(SelfSignedIdentity.defaultDirectory(environment: ["XDG_STATE_HOME": "rel", "HOME": "/home/u"])
            == "/home/u/.local/state/simpletunnel")
    }

    @Test func createdOnceThenReusedWithTheSameFingerprint() throws {
        let directory = NSTemporaryDirectory() + "identity-\(UUID().uuidString)/simpletunnel"
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }

        let first = try SelfSignedIdentity.loadOrCreate(directory: directory)
        #expect(first.wasCreated)
        #expect(first.sha256Fingerprint.count == 32)
        #expect(first.sha256FingerprintHex.count == 64)

        let attributes = try FileManager.default.attributesOfItem(atPath: first.privateKeyPath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let keyBefore = FileManager.default.contents(atPath: first.privateKeyPath)
        let second = try SelfSignedIdentity.loadOrCreate(directory: directory)
        #expect(!second.wasCreated)
        #expect(second.sha256Fingerprint == first.sha256Fingerprint)
        #expect(FileManager.default.contents(atPath: second.privateKeyPath) == keyBefore)

        // The fingerprint is that of the stored certificate, as a client would compute it.
        let pem = try #require(FileManager.default.contents(atPath: first.certificatePath))
        #expect(try CertificateMaker.sha256Fingerprint(ofPEM: [UInt8](pem)) == first.sha256Fingerprint)
    }

    @Test func theFingerprintIsHexOfTheCertificatesSHA256() throws {
        let directory = NSTemporaryDirectory() + "identity-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let identity = try SelfSignedIdentity.loadOrCreate(directory: directory)
        #expect(HexEncoding.decode(identity.sha256FingerprintHex) == identity.sha256Fingerprint)
    }

    @Test func theIdentityServesAPinningClient() async throws {
        let directory = NSTemporaryDirectory() + "identity-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SelfSignedIdentity.loadOrCreate(directory: directory)
        // Reloaded, as a restarted server would.
        let identity = try SelfSignedIdentity.loadOrCreate(directory: directory)

        let serverRecord = PeerRecord()
        let clientRecord = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: identity.serverConfiguration()), record: serverRecord)
        defer { server.close(promise: nil) }
        let pin = try #require(HexEncoding.decode(identity.sha256FingerprintHex))
        let client = try await Loopback.client(
            port: server.port, tls: TLSContext(configuration: .client(trust: .pinnedSHA256([pin]))),
            record: clientRecord, plan: PeerPlan(greeting: Array("pinned hello".utf8)))
        defer { client.close(promise: nil) }
        #expect(await Loopback.waitUntil { serverRecord.snapshot.receivedCount == 12 })
        #expect(clientRecord.snapshot.sessionInfo?.peerCertificateSHA256 == identity.sha256Fingerprint)

        // Without the pin the usual checks apply: here the host name does not match.
        let strictRecord = PeerRecord()
        let strict = try await Loopback.client(
            port: server.port, tls: TLSContext(configuration: .client(trust: .caFile(identity.certificatePath), serverName: "elsewhere.example")),
            record: strictRecord)
        defer { strict.close(promise: nil) }
        #expect(await Loopback.waitUntil { strictRecord.snapshot.closed })
        #expect(!strictRecord.snapshot.handshakeCompleted)
    }
}
