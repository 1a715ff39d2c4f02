import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Our client role against our server role, over real loopback sockets.
@Suite("TLS: our client against our server", .timeLimit(.minutes(2)))
struct TLSLoopbackTests {
    /// Connects a client to a fresh server and waits until both sides have
    /// either completed the handshake or closed.
    struct Pair {
        let server: Channel
        let client: Channel
        let serverRecord: PeerRecord
        let clientRecord: PeerRecord

        func closeAll() {
            client.close(promise: nil)
            server.close(promise: nil)
        }
    }

    static func connect(
        server serverConfiguration: TLSConfiguration,
        client clientConfiguration: TLSConfiguration,
        serverPlan: PeerPlan = PeerPlan(),
        clientPlan: PeerPlan = PeerPlan()
    ) async throws -> Pair {
        let serverRecord = PeerRecord()
        let clientRecord = PeerRecord()
        let server = try await Loopback.server(
            tls: TLSContext(configuration: serverConfiguration), record: serverRecord, plan: serverPlan)
        let client = try await Loopback.client(
            port: server.port, tls: TLSContext(configuration: clientConfiguration), record: clientRecord,
            plan: clientPlan)
        return Pair(server: server, client: client, serverRecord: serverRecord, clientRecord: clientRecord)
    }

    /// Waits for a refused handshake: the client closed, neither side "up".
    static func expectRefused(_ pair: Pair, sourceLocation: SourceLocation = #_sourceLocation) async {
        let closed = await Loopback.waitUntil { pair.clientRecord.snapshot.closed && pair.serverRecord.snapshot.closed }
        #expect(closed, "both sides should close after a refused handshake", sourceLocation: sourceLocation)
        #expect(!pair.clientRecord.snapshot.handshakeCompleted, sourceLocation: sourceLocation)
    }

    @Test func handshakeCarriesDataBothWaysIncludingWritesQueuedBeforeIt() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"),
            serverPlan: PeerPlan(greeting: Array("hello client".utf8)),
            clientPlan: PeerPlan(earlyBytes: Array("early ".utf8), greeting: Array("hello server".utf8))
        )
        defer { pair.closeAll() }

        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.receivedCount == 18 })
        #expect(await Loopback.waitUntil { pair.clientRecord.snapshot.receivedCount == 12 })
        #expect(pair.serverRecord.snapshot.receivedPrefix == Array("early hello server".utf8))
        #expect(pair.clientRecord.snapshot.receivedPrefix == Array("hello client".utf8))

        let clientInfo = try #require(pair.clientRecord.snapshot.sessionInfo)
        #expect(clientInfo.protocolVersion == "TLSv1.3")
        #expect(clientInfo.cipher.contains("GCM"))
        #expect(clientInfo.peerCertificateSubject == "CN=localhost")
        #expect(clientInfo.peerCertificateVerified)
        #expect(clientInfo.peerCertificateSHA256 == pki.server.sha256Fingerprint)
        let serverInfo = try #require(pair.serverRecord.snapshot.sessionInfo)
        #expect(serverInfo.serverName == "localhost", "the client sends SNI")
        #expect(serverInfo.peerCertificateSubject == nil)
        #expect(!serverInfo.peerCertificateVerified)
    }

    @Test func tls12IsNegotiatedWhenThePeerCapsAtIt() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        var client = TLSConfiguration.client(trust: .caFile(pki.caFile), serverName: "localhost")
        client.maximumVersion = .tls12
        let pair = try await Self.connect(server: pki.serverConfiguration(), client: client)
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.handshakeCompleted })
        #expect(pair.serverRecord.snapshot.sessionInfo?.protocolVersion == "TLSv1.2")
        #expect(pair.serverRecord.snapshot.sessionInfo?.cipher == "ECDHE-ECDSA-AES128-GCM-SHA256")
    }

    @Test func serverSendsItsIntermediateFromInMemoryPEM() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let intermediate = try CertificateMaker.make(
            .init(commonName: "Test Intermediate", isCertificateAuthority: true, issuer: pki.ca))
        let leaf = try CertificateMaker.make(
            .init(commonName: "localhost", dnsNames: ["localhost"], issuer: intermediate))
        // The client trusts only the root: the handshake needs the intermediate from the server.
        let pair = try await Self.connect(
            server: .server(
                certificateChain: .bytes(leaf.certificatePEM + intermediate.certificatePEM),
                privateKey: .bytes(leaf.privateKeyPEM)),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.clientRecord.snapshot.handshakeCompleted },
            "\(pair.clientRecord.snapshot)")
        #expect(pair.clientRecord.snapshot.sessionInfo?.peerCertificateSHA256 == leaf.sha256Fingerprint)

        // Without the intermediate the same leaf cannot be verified.
        let leafOnly = try await Self.connect(
            server: .server(certificateChain: .bytes(leaf.certificatePEM), privateKey: .bytes(leaf.privateKeyPEM)),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"))
        defer { leafOnly.closeAll() }
        await Self.expectRefused(leafOnly)
    }

    @Test func serverFromAnUnrelatedCAIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .caFile(pki.otherCAFile), serverName: "localhost"))
        defer { pair.closeAll() }
        await Self.expectRefused(pair)
        #expect(pair.clientRecord.hasError {
            if case .certificateVerificationFailed(let reason) = $0 { return reason.contains("local issuer") }
            return false
        }, "\(pair.clientRecord.snapshot.errors)")
        #expect(!pair.serverRecord.snapshot.handshakeCompleted)
    }

    @Test func systemTrustStoreDoesNotKnowOurTestCA() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(), client: .client(trust: .system, serverName: "localhost"))
        defer { pair.closeAll() }
        await Self.expectRefused(pair)
        // With no trust option given, the message names the options there are and the fingerprint presented.
        let presented = HexEncoding.encode(pki.server.sha256Fingerprint)
        #expect(pair.clientRecord.hasError {
            guard case .certificateNotTrustedBySystem(let reason, presented) = $0 else { return false }
            return reason.contains("local issuer") && $0.description.contains("--ca") && $0.description.contains("--pin-sha256 \(presented)")
        }, "\(pair.clientRecord.snapshot)")
    }

    @Test func wrongHostNameIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration("wrong-host"),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"))
        defer { pair.closeAll() }
        await Self.expectRefused(pair)
        #expect(pair.clientRecord.hasError { $0 == .serverNameMismatch(expected: "localhost", certificateNames: ["elsewhere.example"]) },
            "\(pair.clientRecord.snapshot.errors)")
    }

    @Test func ipAddressIsVerifiedAgainstTheCertificate() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // "server" lists IP:127.0.0.1, "wrong-host" does not.
        let good = try await Self.connect(
            server: pki.serverConfiguration(), client: .client(trust: .caFile(pki.caFile), serverName: "127.0.0.1"))
        defer { good.closeAll() }
        #expect(await Loopback.waitUntil { good.serverRecord.snapshot.handshakeCompleted })
        #expect(good.serverRecord.snapshot.sessionInfo?.serverName == nil, "no SNI for an address literal")
        let bad = try await Self.connect(
            server: pki.serverConfiguration("wrong-host"),
            client: .client(trust: .caFile(pki.caFile), serverName: "127.0.0.1"))
        defer { bad.closeAll() }
        await Self.expectRefused(bad)
        #expect(bad.clientRecord.hasError { $0 == .serverNameMismatch(expected: "127.0.0.1", certificateNames: ["elsewhere.example"]) },
            "\(bad.clientRecord.snapshot.errors)")
    }

    @Test func expiredCertificateIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration("expired"),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"))
        defer { pair.closeAll() }
        await Self.expectRefused(pair)
        #expect(pair.clientRecord.hasError { $0 == .certificateVerificationFailed(reason: "certificate has expired") },
            "\(pair.clientRecord.snapshot.errors)")
    }

    @Test func matchingPinIsAcceptedWithoutCAOrHostName() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // The pin replaces chain and name checks: even the wrong-host certificate passes.
        let pair = try await Self.connect(
            server: pki.serverConfiguration("wrong-host"),
            client: .client(trust: .pinnedSHA256([pki.wrongHostServer.sha256Fingerprint])),
            clientPlan: PeerPlan(greeting: Array("pinned".utf8)))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.receivedCount == 6 })
        #expect(pair.clientRecord.snapshot.sessionInfo?.peerCertificateVerified == true)
    }

    @Test func mismatchedPinIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .pinnedSHA256([pki.wrongHostServer.sha256Fingerprint])))
        defer { pair.closeAll() }
        await Self.expectRefused(pair)
        // Like ssh, the refusal shows the fingerprint the server really presented.
        let presented = HexEncoding.encode(pki.server.sha256Fingerprint)
        #expect(pair.clientRecord.hasError { $0 == .pinnedCertificateMismatch(presented: presented) }, "\(pair.clientRecord.snapshot.errors)")
        #expect(TLSError.pinnedCertificateMismatch(presented: presented).description.contains(presented))
    }

    @Test func mutualTLSWithoutClientCertificateIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(clientCA: pki.caFile),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"),
            clientPlan: PeerPlan(greeting: Array("let me in".utf8)))
        defer { pair.closeAll() }
        // Under TLS 1.3 the client may believe it is up before the server refuses.
        #expect(await Loopback.waitUntil { pair.clientRecord.snapshot.closed && pair.serverRecord.snapshot.closed })
        #expect(!pair.serverRecord.snapshot.handshakeCompleted)
        #expect(pair.serverRecord.snapshot.receivedCount == 0)
        #expect(pair.serverRecord.hasError {
            if case .handshakeFailed(let reason) = $0 { return reason.contains("peer did not return a certificate") }
            return false
        }, "\(pair.serverRecord.snapshot.errors)")
    }

    @Test func mutualTLSWithCertificateFromAnotherCAIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(clientCA: pki.caFile),
            client: .client(
                trust: .caFile(pki.caFile), serverName: "localhost",
                certificateChain: .file(pki.certificatePath("other-client")),
                privateKey: .file(pki.keyPath("other-client"))),
            clientPlan: PeerPlan(greeting: Array("let me in".utf8)))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.clientRecord.snapshot.closed && pair.serverRecord.snapshot.closed })
        #expect(!pair.serverRecord.snapshot.handshakeCompleted)
        #expect(pair.serverRecord.snapshot.receivedCount == 0)
        #expect(pair.serverRecord.hasError {
            if case .certificateVerificationFailed(let reason) = $0 { return reason.contains("local issuer") }
            return false
        }, "\(pair.serverRecord.snapshot.errors)")
    }

    @Test func mutualTLSWithTheRightCertificateExposesTheVerifiedSubject() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await Self.connect(
            server: pki.serverConfiguration(clientCA: pki.caFile),
            client: .client(
                trust: .caFile(pki.caFile), serverName: "localhost",
                certificateChain: .file(pki.certificatePath("client")), privateKey: .file(pki.keyPath("client"))),
            clientPlan: PeerPlan(greeting: Array("alice here".utf8)))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.receivedCount == 10 })
        let info = try #require(pair.serverRecord.snapshot.sessionInfo)
        #expect(info.peerCertificateSubject == "CN=alice")
        #expect(info.peerCertificateVerified)
        #expect(info.peerCertificateSHA256 == pki.client.sha256Fingerprint)
    }

    @Test func sixtyFourMiBEachWayArriveIntact() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let chunks = 64
        let upstream = BulkPattern()
        let downstream = BulkPattern()
        let pair = try await Self.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"),
            serverPlan: PeerPlan(bulkChunks: chunks, pattern: downstream),
            clientPlan: PeerPlan(bulkChunks: chunks, pattern: upstream))
        let total = chunks * BulkPattern.chunkSize
        let bothReceived = await Loopback.waitUntil(seconds: 120) {
            pair.serverRecord.snapshot.receivedCount >= total && pair.clientRecord.snapshot.receivedCount >= total
        }
        #expect(bothReceived)
        // The digests are taken when the channels close.
        try await pair.client.close()
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.closed && pair.clientRecord.snapshot.closed })
        pair.server.close(promise: nil)
        #expect(pair.serverRecord.snapshot.receivedCount == total)
        #expect(pair.clientRecord.snapshot.receivedCount == total)
        #expect(pair.serverRecord.snapshot.receivedDigest == upstream.digest(chunks: chunks))
        #expect(pair.clientRecord.snapshot.receivedDigest == downstream.digest(chunks: chunks))
        #expect(pair.serverRecord.snapshot.shutdownCompleted, "our close must send close_notify")
        #expect(pair.serverRecord.snapshot.errors.isEmpty)
    }

    @Test(arguments: [1, 2])
    func closeRightAfterWritingLosesNothing(closeCalls: Int) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pattern = BulkPattern()
        let pair = try await Self.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"),
            clientPlan: PeerPlan(bulkChunks: 8, pattern: pattern, closeAfterSending: true, closeCalls: closeCalls))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.closed })
        let server = pair.serverRecord.snapshot
        #expect(server.receivedCount == 8 * BulkPattern.chunkSize)
        #expect(server.receivedDigest == pattern.digest(chunks: 8))
        #expect(server.shutdownCompleted, "close_notify should have been received")
        #expect(server.errors.isEmpty, "\(server.errors)")
        #expect(server.sslReleasedOnClose == true)
    }

    @Test func garbageInsteadOfClientHelloClosesCleanlyAndFreesTheSSLObject() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let record = PeerRecord()
        let server = try await Loopback.server(tls: TLSContext(configuration: pki.serverConfiguration()), record: record)
        defer { server.close(promise: nil) }
        let raw = try await ClientBootstrap(group: Loopback.group).connect(host: "127.0.0.1", port: server.port).get()
        try await raw.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        #expect(await Loopback.waitUntil { record.snapshot.closed })
        try await raw.closeFuture.get()  // the server hung up on us
        let snapshot = record.snapshot
        #expect(!snapshot.handshakeCompleted)
        #expect(snapshot.receivedCount == 0)
        #expect(snapshot.sslReleasedOnClose == true)
        #expect(record.hasError {
            if case .handshakeFailed(let reason) = $0 { return reason.contains("http request") }
            return false
        }, "\(snapshot.errors)")
    }

    @Test func writesQueuedBeforeTheHandshakeFailWhenTheConnectionDrops() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // A plain TCP server that hangs up at once: the handshake never completes.
        let hangUp = try await ServerBootstrap(group: Loopback.group)
            .childChannelInitializer { channel in channel.close() }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { hangUp.close(promise: nil) }
        let record = PeerRecord()
        _ = try await Loopback.client(
            port: hangUp.port, tls: TLSContext(configuration: .client(trust: .caFile(pki.caFile), serverName: "localhost")),
            record: record, plan: PeerPlan(earlyBytes: Array("never sent".utf8)))
        #expect(await Loopback.waitUntil { record.snapshot.closed && !record.snapshot.failedWrites.isEmpty })
        #expect(record.snapshot.failedWrites == [.closedBeforeHandshake])
        #expect(record.snapshot.sslReleasedOnClose == true)
    }

    @Test func configurationErrorsNameTheProblem() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        #expect(throws: TLSError.invalidConfiguration("certificate chain file /nonexistent.pem does not exist or is not readable")) {
            try TLSContext(configuration: .server(certificateChain: .file("/nonexistent.pem"), privateKey: .file(pki.keyPath("server"))))
        }
        #expect(throws: TLSError.self) {
            // Key of another certificate.
            try TLSContext(configuration: .server(certificateChain: .file(pki.certificatePath("server")), privateKey: .file(pki.keyPath("client"))))
        }
        let context = try TLSContext(configuration: .client(trust: .caFile(pki.caFile)))
        #expect(throws: TLSError.self) { try TLSHandler(context: context) }  // no server name to verify
    }
}

@Suite("TLS: backpressure", .timeLimit(.minutes(2)))
struct TLSBackpressureTests {
    @Test func unflushedPlaintextCountsTowardsWritability() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try await TLSLoopbackTests.connect(
            server: pki.serverConfiguration(),
            client: .client(trust: .caFile(pki.caFile), serverName: "localhost"))
        defer { pair.closeAll() }
        #expect(await Loopback.waitUntil { pair.clientRecord.snapshot.handshakeCompleted })
        // 1 MiB written in 16 KiB pieces, none flushed: the handler must not hold it
        // all out of the channel's sight (default high-water mark: 64 KiB).
        let writableAfter = try await pair.client.eventLoop.submit {
            let piece = ByteBuffer(repeating: 7, count: 16 * 1024)
            for _ in 0..<64 { pair.client.write(piece, promise: nil) }
            return pair.client.isWritable
        }.get()
        #expect(!writableAfter)
        pair.client.flush()
        #expect(await Loopback.waitUntil { pair.serverRecord.snapshot.receivedCount == 1 << 20 })
    }
}
