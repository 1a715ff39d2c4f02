import Testing
@testable import SimpleTunnelServices

/// A certificate made for a name, reached by address: the message names
/// --server-name and the certificate's names instead of blaming the CA file.
@Suite("TLS: server name mismatch text")
struct ServerNameMismatchTextTests {
    @Test func anAddressAgainstANamedCertificateSuggestsServerNameWithItsName() {
        let error = TLSError.serverNameMismatch(expected: "127.0.0.1", certificateNames: ["vpn.example.com", "10.0.0.1"])
        let text = error.description
        #expect(text.contains("not made for the address 127.0.0.1"), "\(text)")
        #expect(text.contains("it is for vpn.example.com, 10.0.0.1"), "\(text)")
        #expect(text.contains("--server-name vpn.example.com, keeping the address in --server"), "\(text)")
        #expect(!text.contains("CA file"), "\(text)")
    }

    @Test func aNameAgainstAnotherNameSuggestsTheCertificatesName() {
        let text = TLSError.serverNameMismatch(expected: "localhost", certificateNames: ["10.0.0.1", "vpn.example.com"]).description
        #expect(text.contains("not made for the name localhost"), "\(text)")
        #expect(text.contains("--server-name vpn.example.com"), "\(text)")
        #expect(!text.contains("keeping the address"), "\(text)")
    }

    @Test func unreadableNamesStillPointAtServerName() {
        let text = TLSError.serverNameMismatch(expected: "127.0.0.1", certificateNames: []).description
        #expect(text.contains("--server-name NAME"), "\(text)")
    }

    @Test func aNameMismatchIsNotRetried() {
        #expect(TLSError.serverNameMismatch(expected: "127.0.0.1", certificateNames: []).isPermanent)
    }
}
