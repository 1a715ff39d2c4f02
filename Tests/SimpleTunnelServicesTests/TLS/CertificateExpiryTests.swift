import Foundation
import Testing
@testable import SimpleTunnelServices

/// The server's certificate near its end, and a client CA past its own: said in
/// the log, in `status` and in `simpletunnel_certificate_expiry_seconds`.
@Suite("A certificate near its end is said in the log, status and metrics", .timeLimit(.minutes(2)))
struct CertificateExpiryTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400

    @Test func aCertificateWithMoreThan30DaysLeftIsNoConcern() {
        let expiry = CertificateExpiry(certificateNotAfter: now + 31 * Self.day, clientCAs: [])
        #expect(expiry.warnings(now: now).isEmpty)
        #expect(expiry.secondsLeft(now: now) == 31 * Self.day)
    }

    @Test func within30DaysTheDaysLeftAreSaidAndOnceExpiredThatClientsRefuseIt() {
        let soon = CertificateExpiry(certificateNotAfter: now + 30 * Self.day, clientCAs: [])
        #expect(soon.warnings(now: now).count == 1)
        #expect(soon.warnings(now: now).first?.contains("expires on 2027-02-14") == true, "\(soon.warnings(now: now))")
        #expect(soon.warnings(now: now).first?.contains("in 30 days") == true, "\(soon.warnings(now: now))")
        #expect(soon.warnings(now: now + 29.5 * Self.day).first?.contains("within a day") == true)
        let past = soon.warnings(now: now + 31 * Self.day)
        #expect(past.count == 1 && past[0].contains("expired on") && past[0].contains("clients refuse it"), "\(past)")
        #expect(soon.secondsLeft(now: now + 31 * Self.day) == -Self.day)
    }

    @Test func onlyAnExpiredClientCAIsNamed() {
        let expiry = CertificateExpiry(
            certificateNotAfter: nil,
            clientCAs: [
                CertificateValidity(subject: "CN=Old CA", notAfter: now - Self.day),
                CertificateValidity(subject: "CN=Current CA", notAfter: now + 365 * Self.day),
            ])
        let warnings = expiry.warnings(now: now)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains(#""CN=Old CA" expired on"#) == true, "\(warnings)")
        #expect(expiry.secondsLeft(now: now) == nil)
    }

    /// What `openssl x509 -enddate` says of the file, as a date.
    static func opensslEndDate(_ path: String) async throws -> Date? {
        let result = try await ExternalProcess.run("/usr/bin/openssl", ["x509", "-in", path, "-noout", "-enddate"], timeout: 30)
        let line = String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        let text = line.replacingOccurrences(of: "notAfter=", with: "").replacingOccurrences(of: "  ", with: " ")
        return formatter.date(from: text)
    }

    /// A server certificate with 10 days left and a client CA that expired yesterday, in `pki`'s folder.
    static func writeShortLivedCertificates(_ pki: TestPKI) throws -> (certificate: String, key: String, clientCA: String) {
        let soon = try CertificateMaker.make(
            .init(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], validFromOffset: 0, lifetime: 10 * 86_400, issuer: pki.ca))
        let oldCA = try CertificateMaker.make(
            .init(commonName: "Retired Client CA", validFromOffset: -60 * 86_400, lifetime: 59 * 86_400, isCertificateAuthority: true))
        let paths = (pki.certificatePath("soon"), pki.keyPath("soon"), pki.certificatePath("retired-ca"))
        try Data(soon.certificatePEM).write(to: URL(fileURLWithPath: paths.0))
        try TestPKI.writeKey(soon.privateKeyPEM, to: paths.1)
        // The file holds the current CA too: only the expired one is named.
        try Data(oldCA.certificatePEM + pki.ca.certificatePEM).write(to: URL(fileURLWithPath: paths.2))
        return paths
    }

    @Test(.enabled(if: TestRequirements.met(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl")))
    func aContextReadsItsCertificatesEndAsOpenSSLDoesAndItsClientCAs() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let paths = try Self.writeShortLivedCertificates(pki)
        let context = try TLSContext(configuration: .server(certificateChain: .file(paths.certificate), privateKey: .file(paths.key), clientCA: paths.clientCA))
        let read = try #require(context.expiry.certificateNotAfter)
        #expect(read == (try await Self.opensslEndDate(paths.certificate)))
        #expect(context.expiry.clientCAs.map(\.subject) == ["CN=Retired Client CA", "CN=SimpleTunnel Test CA"])
        let warnings = context.expiry.warnings()
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.contains { $0.contains("the server certificate expires on") && $0.contains("in 9 days") }, "\(warnings)")
        #expect(warnings.contains { $0.contains(#"client CA "CN=Retired Client CA" expired"#) }, "\(warnings)")

        let healthy = try TLSContext(configuration: pki.serverConfiguration(clientCA: pki.caFile))
        #expect(healthy.expiry.warnings().isEmpty, "\(healthy.expiry.warnings())")
    }

    /// A TCP port no one listens on now on 127.0.0.1 (the metrics option takes no 0).
    static func freeLoopbackPort() throws -> Int {
        let socket = try ServerSocketProbe()
        return socket.port
    }

    @Test(.timeLimit(.minutes(2)))
    func theRunningServerSaysItInItsLogStatusAndMetrics() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let paths = try Self.writeShortLivedCertificates(pki)
        let control = pki.directory + "/server.sock"
        let metricsPort = try Self.freeLoopbackPort()
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--cert", paths.certificate, "--key", paths.key, "--client-ca", paths.clientCA,
            "--no-ip-layer", "--metrics", "127.0.0.1:\(metricsPort)", "--control", control, "--state-directory", pki.directory + "/state",
        ])
        defer { server.terminate() }
        let started = try #require(await server.waitForOutput(containing: "control socket at", timeout: 30), "\(server.outputSoFar)")
        #expect(started.contains("the server certificate expires on"), "\(started)")
        #expect(started.contains(#"client CA "CN=Retired Client CA" expired"#), "\(started)")

        let status = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["status", "--control", control], timeout: 30)
        let text = String(decoding: status.output, as: UTF8.self)
        #expect(status.status == 0, "\(text)")
        #expect(text.hasPrefix("warning: the server certificate expires on"), "\(text)")
        let json = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["status", "--json", "--control", control], timeout: 30)
        let decoded = try JSONDecoder().decode(TunnelServerStatus.self, from: Data(json.output))
        #expect(decoded.warnings?.count == 2, "\(decoded)")

        let scrape = try await ExternalProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(metricsPort)/metrics"], timeout: 30)
        let metrics = String(decoding: scrape.output, as: UTF8.self)
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("simpletunnel_certificate_expiry_seconds ") }
        let seconds = try #require(line.flatMap { Double($0.split(separator: " ").last ?? "") }, "\(metrics)")
        // Ten days from when the test made it, less the seconds since.
        #expect(seconds > 10 * Self.day - 120 && seconds <= 10 * Self.day, "\(seconds)")
    }
}

/// A socket bound to 127.0.0.1 on a port the kernel picks, closed at once: the port is free then.
struct ServerSocketProbe {
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }
}
