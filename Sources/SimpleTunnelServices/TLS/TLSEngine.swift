import COpenSSL
import CTLSShims
import Foundation
import NIOCore

/// One `SSL *` over a window BIO (CTLSShims): received buffers are lent to
/// OpenSSL as they are, and it writes records straight into the buffer that
/// goes to the socket. Every call answers complete / incomplete / failed. No pipeline
/// logic here; `TLSHandler` decides what each answer means.
///
/// Not thread-safe: owned by one handler on one event loop.
final class TLSEngine {
    enum Step: Equatable {
        case complete
        /// OpenSSL needs more ciphertext from the peer.
        case incomplete
        case failed(TLSError)
    }

    enum ReadResult: Equatable {
        case bytes(Int)
        /// Nothing more until more ciphertext arrives.
        case wouldBlock
        /// The peer sent close_notify.
        case closeNotify
        case failed(TLSError)
    }

    private var ssl: OpaquePointer?
    /// The window BIO's state: where OpenSSL reads and writes ciphertext. Owned by `ssl`.
    private let window: UnsafeMutablePointer<ctls_window>
    /// Ciphertext from the network, not yet consumed by OpenSSL: the buffers
    /// the channel read, lent to OpenSSL one at a time (no copy).
    private var incoming = CircularBuffer<ByteBuffer>()
    private var incomingCount = 0
    /// Ciphertext from OpenSSL, to send to the network.
    private var outgoing: ByteBuffer?
    private var lastTakenCount = 0
    private let allocator = ByteBufferAllocator()
    /// The SSL keeps its SSL_CTX alive, but the verify callback's Swift state
    /// lives in the TLSContext, so the connection must keep that alive too.
    private let context: TLSContext
    /// The name or address the server's certificate must be for (clients only).
    private let expectedServerName: String?

    init(context: TLSContext, serverName: String?) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.sslContext) else {
            throw .invalidConfiguration(OpenSSLErrorQueue.drain(fallback: "SSL_new failed"))
        }
        guard let bio = ctls_window_bio_new(), let window = ctls_window_bio_state(bio) else {
            SSL_free(ssl)
            throw .invalidConfiguration("out of memory creating TLS buffers")
        }
        // One BIO both ways; the SSL takes our one reference.
        SSL_set_bio(ssl, bio, bio)
        self.ssl = ssl
        self.window = window
        self.context = context

        let configuration = context.configuration
        self.expectedServerName = serverName ?? configuration.serverName
        if configuration.role == .client {
            try Self.configureServerName(
                ssl, name: serverName ?? configuration.serverName, configuration: configuration)
            SSL_set_connect_state(ssl)
        } else {
            SSL_set_accept_state(ssl)
        }
    }

    deinit {
        release()
    }

    /// Frees the `SSL *` (and its BIO) now rather than at deinit.
    func release() {
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
        incoming.removeAll()
        incomingCount = 0
        outgoing = nil
    }

    // MARK: Ciphertext in and out

    func receiveCiphertext(_ buffer: ByteBuffer) {
        guard ssl != nil, buffer.readableBytes > 0 else { return }
        incoming.append(buffer)
        incomingCount += buffer.readableBytes
    }

    /// Ciphertext received but not yet consumed by OpenSSL.
    var bufferedCiphertextCount: Int {
        guard ssl != nil else { return 0 }
        return incomingCount
    }

    /// Plaintext OpenSSL has decrypted but not handed out yet.
    var bufferedPlaintextCount: Int {
        guard let ssl else { return 0 }
        return Int(SSL_pending(ssl))
    }

    /// Ciphertext produced and not yet taken.
    var bufferedOutgoingCiphertextCount: Int {
        guard ssl != nil else { return 0 }
        return (outgoing?.readableBytes ?? 0) + window.pointee.overflow_length
    }

    /// All ciphertext OpenSSL has produced, in one buffer; nil if none.
    func takeCiphertext() -> ByteBuffer? {
        guard ssl != nil else { return nil }
        collectOverflow()
        defer { outgoing = nil }
        guard let outgoing, outgoing.readableBytes > 0 else { return nil }
        lastTakenCount = Swift.min(outgoing.readableBytes, Self.maximumStartCapacity)
        return outgoing
    }

    /// Runs `call` (one OpenSSL operation) with the received ciphertext lent
    /// to the BIO, buffer by buffer while `call` wants more and more is here.
    private func withIncoming<T>(_ wantsMore: (T) -> Bool, _ call: () -> T) -> T {
        while true {
            guard !incoming.isEmpty else { return call() }
            let front = incoming.startIndex
            let available = incoming[front].readableBytes
            let (result, left) = incoming[front].withUnsafeReadableBytes { bytes -> (T, Int) in
                // Valid only while this closure runs: taken back before it returns.
                window.pointee.in = bytes.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) }
                window.pointee.in_length = bytes.count
                let result = call()
                let left = window.pointee.in_length
                window.pointee.in = nil
                window.pointee.in_length = 0
                return (result, left)
            }
            incomingCount -= available - left
            guard left == 0 else {
                incoming[front].moveReaderIndex(forwardBy: available - left)
                return result
            }
            incoming.removeFirst()
            guard wantsMore(result), !incoming.isEmpty else { return result }
        }
    }

    /// Moves what OpenSSL wrote outside a lent window (handshake, alerts,
    /// a record too large for the window) to the end of `outgoing`.
    private func collectOverflow() {
        let count = window.pointee.overflow_length
        guard count > 0 else { return }
        var buffer = outgoing ?? allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
            guard let base = space.baseAddress else { return 0 }
            ctls_window_take_overflow(window, base.assumingMemoryBound(to: UInt8.self))
            return count
        }
        outgoing = buffer
    }

    // MARK: TLS operations

    func handshake() -> Step {
        guard let ssl else { return .failed(.closedBeforeHandshake) }
        OpenSSLErrorQueue.clear()
        let result = withIncoming({ $0 != 1 && SSL_get_error(ssl, $0) == SSL_ERROR_WANT_READ }) { SSL_do_handshake(ssl) }
        if result == 1 { return .complete }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .incomplete
        default:
            return .failed(handshakeError(ssl))
        }
    }

    /// Decrypts into `space`; call until it stops returning `.bytes`.
    func read(into space: UnsafeMutableRawBufferPointer) -> ReadResult {
        guard let ssl else { return .failed(.alreadyClosed) }
        guard let base = space.baseAddress, space.count > 0 else { return .bytes(0) }
        OpenSSLErrorQueue.clear()
        var count = 0
        let accepted = withIncoming({ $0 != 1 && SSL_get_error(ssl, 0) == SSL_ERROR_WANT_READ }) {
            SSL_read_ex(ssl, base, space.count, &count)
        }
        if accepted == 1 {
            return .bytes(count)
        }
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            return .closeNotify
        default:
            return .failed(.protocolFailure(reason: OpenSSLErrorQueue.drain(fallback: "SSL_read failed")))
        }
    }

    /// Encrypts all of `buffer` into the outgoing ciphertext, written by
    /// OpenSSL straight into the buffer `takeCiphertext` returns.
    func write(_ buffer: ByteBuffer) -> Step {
        guard let ssl else { return .failed(.alreadyClosed) }
        guard buffer.readableBytes > 0 else { return .complete }
        OpenSSLErrorQueue.clear()
        collectOverflow()
        // Room for every record's header, tag and padding; the overflow takes any excess.
        let room = buffer.readableBytes + (buffer.readableBytes / 16_384 + 1) * Self.recordOverhead
        // A batch's buffer starts as large as the last one taken, so bulk data rarely regrows it.
        // Reused at the largest size taken: without `MallocTuning`, glibc trims its heap and faults
        // the pages of a fresh batch buffer back in every time, which cost a third more CPU.
        var ciphertext = outgoing ?? allocator.buffer(capacity: Swift.max(room, lastTakenCount))
        outgoing = nil
        var accepted: Int32 = 0
        buffer.withUnsafeReadableBytes { bytes in
            ciphertext.writeWithUnsafeMutableBytes(minimumWritableBytes: room) { space in
                window.pointee.out = space.baseAddress?.assumingMemoryBound(to: UInt8.self)
                window.pointee.out_capacity = space.count
                window.pointee.out_length = 0
                var written = 0
                accepted = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &written)
                let produced = window.pointee.out_length
                window.pointee.out = nil
                window.pointee.out_capacity = 0
                window.pointee.out_length = 0
                return produced
            }
        }
        outgoing = ciphertext
        collectOverflow()
        if accepted == 1 {
            return .complete
        }
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            // Cannot happen: the BIO always takes everything, and renegotiation is off.
            return .incomplete
        default:
            return .failed(.protocolFailure(reason: OpenSSLErrorQueue.drain(fallback: "SSL_write failed")))
        }
    }

    /// Per-record bytes beyond the plaintext: header, content type, tag, CBC padding and IV at worst.
    private static let recordOverhead = 5 + 1 + 16 + 256 + 16
    private static let maximumStartCapacity = 2 * TLSHandler.maximumBatchSize + 64 * 1024

    /// Queues our close_notify. `.complete` once both sides' notifications are done.
    func shutdown() -> Step {
        guard let ssl else { return .complete }
        OpenSSLErrorQueue.clear()
        let result = withIncoming({ _ in false }) { SSL_shutdown(ssl) }
        if result == 1 { return .complete }
        if result == 0 { return .incomplete }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .incomplete
        default:
            return .failed(.protocolFailure(reason: OpenSSLErrorQueue.drain(fallback: "SSL_shutdown failed")))
        }
    }

    /// Facts about the established session; call after the handshake.
    func sessionInfo() -> TLSSessionInfo? {
        guard let ssl else { return nil }
        let version = SSL_get_version(ssl).map { String(cString: $0) } ?? "unknown"
        let cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) }
        var subject: String?
        var fingerprint: [UInt8]?
        if let peer = SSL_get0_peer_certificate(ssl) {
            fingerprint = X509Inspection.sha256Fingerprint(peer)
            subject = X509Inspection.subject(peer)
        }
        let verified = SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER != 0
            && SSL_get_verify_result(ssl) == X509_V_OK && fingerprint != nil
        let serverName = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        return TLSSessionInfo(
            protocolVersion: version,
            cipher: cipher ?? "unknown",
            serverName: serverName,
            peerCertificateSubject: subject,
            peerCertificateSHA256: fingerprint,
            peerCertificateVerified: verified
        )
    }

    // MARK: Helpers

    private func handshakeError(_ ssl: OpaquePointer) -> TLSError {
        let reason = OpenSSLErrorQueue.drain(fallback: "the peer closed or sent something that is not TLS")
        let verifyResult = SSL_get_verify_result(ssl)
        if verifyResult != X509_V_OK {
            if case .pinnedSHA256 = context.configuration.trust, context.configuration.role == .client, verifyResult == X509_V_ERR_CERT_REJECTED {
                return .pinnedCertificateMismatch(presented: Self.presentedLeafFingerprint(ssl))
            }
            let nameMismatch = verifyResult == X509_V_ERR_HOSTNAME_MISMATCH || verifyResult == X509_V_ERR_IP_ADDRESS_MISMATCH
            if nameMismatch, context.configuration.role == .client, let expected = expectedServerName {
                let names = ctls_peer_presented_leaf(ssl).map { X509Inspection.alternativeNames($0) } ?? []
                return .serverNameMismatch(expected: expected, certificateNames: names)
            }
            let text = X509_verify_cert_error_string(verifyResult).map { String(cString: $0) } ?? reason
            if case .system = context.configuration.trust, context.configuration.role == .client {
                return .certificateNotTrustedBySystem(reason: text, presented: Self.presentedLeafFingerprint(ssl))
            }
            return .certificateVerificationFailed(reason: text)
        }
        return .handshakeFailed(reason: reason)
    }

    /// The SHA-256 of the certificate the peer presented, even when it failed
    /// verification (the chain is kept; the verified peer is not set then).
    private static func presentedLeafFingerprint(_ ssl: OpaquePointer) -> String? {
        guard let leaf = ctls_peer_presented_leaf(ssl), let fingerprint = X509Inspection.sha256Fingerprint(leaf) else { return nil }
        return HexEncoding.encode(fingerprint)
    }

    private static func configureServerName(
        _ ssl: OpaquePointer, name: String?, configuration: TLSConfiguration
    ) throws(TLSError) {
        let verifiesName: Bool
        switch configuration.trust {
        case .system, .caFile: verifiesName = configuration.verifiesHostName
        case .pinnedSHA256, .insecureNoVerification: verifiesName = false
        }
        guard let name, !name.isEmpty else {
            if verifiesName {
                throw .invalidConfiguration(
                    "host-name verification is on but no server name was given"
                        + " (set serverName, or pin the certificate's SHA-256 fingerprint)")
            }
            return
        }
        let isAddress = IPAddress(name) != nil
        if !isAddress {
            // SNI carries host names only, never address literals (RFC 6066).
            _ = ctls_SSL_set_tlsext_host_name(ssl, name)
        }
        guard verifiesName else { return }
        let accepted: Int32
        if isAddress {
            accepted = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
        } else {
            accepted = SSL_set1_host(ssl, name)
        }
        guard accepted == 1 else {
            throw .invalidConfiguration("server name \"\(name)\" cannot be used for verification")
        }
    }
}
