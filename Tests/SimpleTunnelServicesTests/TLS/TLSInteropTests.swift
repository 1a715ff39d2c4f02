import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Our handler against real third-party peers: `openssl s_client`,
/// `openssl s_server` and Python's `ssl`, all on loopback.
@Suite("TLS: interoperability with OpenSSL tools and Python", .timeLimit(.minutes(2)))
struct TLSInteropTests {
    static let greeting = "hello from simpletunnel\n"

    /// A server of ours that greets, then closes with close_notify.
    static func greetingServer(_ configuration: TLSConfiguration) async throws -> (Channel, PeerRecord) {
        let record = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: configuration), record: record,
            plan: PeerPlan(greeting: Array(greeting.utf8), closeAfterSending: true))
        return (server, record)
    }

    // MARK: openssl s_client against our server

    @Test func sClientVerifiesOurServerAndReadsItsData() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (server, record) = try await Self.greetingServer(pki.serverConfiguration())
        defer { server.close(promise: nil) }
        let client = try ExternalProcess([
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", pki.caFile,
            "-verify_return_error", "-verify_hostname", "localhost", "-servername", "localhost", "-ign_eof",
        ])
        defer { client.terminate() }
        let (status, output) = await client.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains(Self.greeting))
        #expect(output.contains("Verify return code: 0 (ok)"))
        // Our close sent close_notify: OpenSSL 3 reports a bare TCP close as an error.
        #expect(!output.contains("unexpected eof"), "\(output)")
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        #expect(record.snapshot.handshakeCompleted)
        #expect(record.snapshot.sessionInfo?.protocolVersion == "TLSv1.3")
        #expect(record.snapshot.errors.isEmpty, "\(record.snapshot)")
    }

    @Test func aClientOfferingOnlyTLS11IsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let tls11Only = ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]

        // Control: this very client does speak TLS 1.1 to a server that allows it,
        // so a refusal below is our server's doing.
        let permissive = try ExternalProcess(
            ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", pki.certificatePath("server"),
             "-key", pki.keyPath("server"), "-www"] + tls11Only,
            standardInput: .silent)
        defer { permissive.terminate() }
        let banner = try #require(await permissive.waitForOutput(containing: "ACCEPT"))
        let permissivePort = try #require(Self.acceptPort(banner))
        let control = try ExternalProcess(
            ["openssl", "s_client", "-connect", "127.0.0.1:\(permissivePort)"] + tls11Only)
        defer { control.terminate() }
        _ = await control.waitForOutput(containing: "Protocol  :")
        control.terminate()
        let (_, controlOutput) = await control.finish()
        #expect(controlOutput.contains("Protocol  : TLSv1.1"), "\(controlOutput)")

        let (server, record) = try await Self.greetingServer(pki.serverConfiguration())
        defer { server.close(promise: nil) }
        let client = try ExternalProcess(
            ["openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-ign_eof"] + tls11Only)
        defer { client.terminate() }
        let (status, output) = await client.finish()
        #expect(status != 0)
        #expect(!output.contains(Self.greeting))
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        #expect(!record.snapshot.handshakeCompleted)
        #expect(record.hasError {
            if case .handshakeFailed(let reason) = $0 { return reason.contains("unsupported protocol") }
            return false
        }, "\(record.snapshot)")
    }

    // MARK: our client against openssl s_server

    static func startSServer(certificate: String, key: String) async throws -> (ExternalProcess, Int) {
        let process = try ExternalProcess(
            ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"],
            standardInput: .silent)
        guard let banner = await process.waitForOutput(containing: "ACCEPT"), let port = acceptPort(banner) else {
            process.terminate()
            throw TLSError.handshakeFailed(reason: "openssl s_server did not start: \(process.outputSoFar)")
        }
        return (process, port)
    }

    /// The port in s_server's "ACCEPT 127.0.0.1:PORT" line.
    static func acceptPort(_ output: String) -> Int? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }),
            let port = line.split(separator: ":").last
        else { return nil }
        return Int(port.trimmingCharacters(in: .whitespaces))
    }

    @Test func ourClientVerifiesSServerAndExchangesData() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (sServer, port) = try await Self.startSServer(
            certificate: pki.certificatePath("server"), key: pki.keyPath("server"))
        defer { sServer.terminate() }
        let record = PeerRecord()
        let client = try await Loopback.client(
            port: port, tls: TLSContext(configuration: .client(trust: .caFile(pki.caFile), serverName: "localhost")),
            record: record, plan: PeerPlan(greeting: Array("GET / HTTP/1.0\r\n\r\n".utf8)))
        defer { client.close(promise: nil) }
        // s_server -www answers with a status page, then closes.
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        let page = String(decoding: record.snapshot.receivedPrefix, as: UTF8.self)
        #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(page.prefix(200))")
        #expect(page.contains("TLSv1.3"))
        #expect(record.snapshot.sessionInfo?.peerCertificateVerified == true)
        #expect(record.snapshot.shutdownCompleted, "s_server closes with close_notify")
    }

    @Test func ourClientRefusesSServersExpiredCertificate() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (sServer, port) = try await Self.startSServer(
            certificate: pki.certificatePath("expired"), key: pki.keyPath("expired"))
        defer { sServer.terminate() }
        let record = PeerRecord()
        let client = try await Loopback.client(
            port: port, tls: TLSContext(configuration: .client(trust: .caFile(pki.caFile), serverName: "localhost")),
            record: record)
        defer { client.close(promise: nil) }
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        #expect(!record.snapshot.handshakeCompleted)
        #expect(record.hasError { $0 == .certificateVerificationFailed(reason: "certificate has expired") },
            "\(record.snapshot)")
    }

    @Test func ourClientPinsSServersCertificate() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (sServer, port) = try await Self.startSServer(
            certificate: pki.certificatePath("server"), key: pki.keyPath("server"))
        defer { sServer.terminate() }
        for (pin, shouldConnect) in [(pki.server.sha256Fingerprint, true), (pki.client.sha256Fingerprint, false)] {
            let record = PeerRecord()
            let client = try await Loopback.client(
                port: port, tls: TLSContext(configuration: .client(trust: .pinnedSHA256([pin]))), record: record,
                plan: PeerPlan(greeting: Array("GET / HTTP/1.0\r\n\r\n".utf8)))
            defer { client.close(promise: nil) }
            #expect(await Loopback.waitUntil { record.snapshot.closed })
            #expect(record.snapshot.handshakeCompleted == shouldConnect, "\(record.snapshot)")
            #expect(record.hasError { if case .pinnedCertificateMismatch = $0 { true } else { false } } == !shouldConnect, "\(record.snapshot)")
        }
    }

    // MARK: Python's ssl against our server

    static let pythonClient = #"""
        import hashlib, socket, ssl, sys
        mode, port, cafile, cert, key = sys.argv[1:6]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cafile)
        if cert != "-":
            ctx.load_cert_chain(cert, key)
        raw = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
        tls = ctx.wrap_socket(raw, server_hostname="localhost")
        print("VERSION", tls.version(), flush=True)
        if mode == "echo":
            message = b"ping from python"
            tls.sendall(message)
            echoed = b""
            while len(echoed) < len(message):
                data = tls.recv(65536)
                if not data:
                    break
                echoed += data
            print("ECHO", echoed.decode(), flush=True)
            tls.unwrap()
        elif mode == "abrupt":
            data = hashlib.sha256(b"seed").digest() * (1 << 15)  # 1 MiB
            tls.sendall(data)
            print("SHA256", hashlib.sha256(data).hexdigest(), flush=True)
            # Close the TCP socket without close_notify, mid-stream from TLS's view.
            raw.close()
        elif mode == "mtls":
            try:
                tls.sendall(b"hello")
                data = tls.recv(100)
                print("READ", repr(data), flush=True)
            except (ssl.SSLError, OSError) as error:
                print("REFUSED", error, flush=True)
        """#

    static func runPython(_ mode: String, port: Int, pki: TestPKI, client: String? = nil) async throws -> (Int32, String) {
        let process = try ExternalProcess([
            "python3", "-c", pythonClient, mode, "\(port)", pki.caFile,
            client.map(pki.certificatePath) ?? "-", client.map(pki.keyPath) ?? "-",
        ])
        defer { process.terminate() }
        return await process.finish()
    }

    @Test(.enabled(if: TestRequirements.met(ExternalProcess.isPythonAvailable, "python3")))
    func pythonClientVerifiesOurServerAndGetsAnEcho() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let record = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: pki.serverConfiguration()), record: record, plan: PeerPlan(echo: true))
        defer { server.close(promise: nil) }
        let (status, output) = try await Self.runPython("echo", port: server.port, pki: pki)
        #expect(status == 0, "\(output)")
        #expect(output.contains("VERSION TLSv1.3"))
        #expect(output.contains("ECHO ping from python"))
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        #expect(record.snapshot.shutdownCompleted, "python's unwrap() sends close_notify")
    }

    @Test(.enabled(if: TestRequirements.met(ExternalProcess.isPythonAvailable, "python3")))
    func pythonClientVanishingMidStreamLosesNoDeliveredPlaintext() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let record = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: pki.serverConfiguration()), record: record)
        defer { server.close(promise: nil) }
        let (status, output) = try await Self.runPython("abrupt", port: server.port, pki: pki)
        #expect(status == 0, "\(output)")
        let sentDigest = try #require(output.split(separator: "\n").first { $0.hasPrefix("SHA256 ") }?.dropFirst(7))
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        let snapshot = record.snapshot
        #expect(snapshot.receivedCount == 1 << 20)
        #expect(snapshot.receivedDigest.map(HexEncoding.encode) == String(sentDigest))
        #expect(record.hasError { $0 == .uncleanShutdown }, "\(snapshot)")
        #expect(snapshot.sslReleasedOnClose == true)
    }

    @Test(.enabled(if: TestRequirements.met(ExternalProcess.isPythonAvailable, "python3")), arguments: [nil, "other-client", "client"])
    func pythonClientAgainstMutualTLS(clientCertificate: String?) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let record = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: pki.serverConfiguration(clientCA: pki.caFile)), record: record,
            plan: PeerPlan(echo: true))
        defer { server.close(promise: nil) }
        let (_, output) = try await Self.runPython("mtls", port: server.port, pki: pki, client: clientCertificate)
        if clientCertificate == "client" {
            #expect(output.contains("READ b'hello'"), "\(output)")
            #expect(record.snapshot.sessionInfo?.peerCertificateSubject == "CN=alice")
        } else {
            // TLS 1.3: the refusal reaches the client after its handshake, as an alert or a close.
            #expect(!output.contains("READ b'hello'"), "\(output)")
            #expect(await Loopback.waitUntil { record.snapshot.closed })
            #expect(!record.snapshot.handshakeCompleted)
            #expect(record.snapshot.receivedCount == 0)
            #expect(!record.snapshot.errors.isEmpty)
        }
    }
}
