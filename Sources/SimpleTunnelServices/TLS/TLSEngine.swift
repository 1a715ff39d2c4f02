import COpenSSL
import CTLSShims
import Foundation
import NIOCore

/// One `SSL *` over a pair of memory BIOs: ciphertext goes in and out as
/// bytes, and every call answers complete / incomplete / failed. No pipeline
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
    /// Ciphertext from the network, read by OpenSSL. Owned by `ssl`.
    private let networkIn: OpaquePointer
    /// Ciphertext from OpenSSL, to send to the network. Owned by `ssl`.
    private let networkOut: OpaquePointer
    /// The SSL keeps its SSL_CTX alive, but the verify callback's Swift state
    /// lives in the TLSContext, so the connection must keep that alive too.
    private let context: TLSContext

    init(context: TLSContext, serverName: String?) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.sslContext) else {
            throw .invalidConfiguration(OpenSSLErrorQueue.drain(fallback: "SSL_new failed"))
        }
        let input = BIO_new(BIO_s_mem())
        let output = BIO_new(BIO_s_mem())
        guard let input, let output else {
            BIO_free(input)
            BIO_free(output)
            SSL_free(ssl)
            throw .invalidConfiguration("out of memory creating TLS buffers")
        }
        // An empty input BIO means "wait for more", never end of file.
        _ = ctls_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        self.ssl = ssl
        self.networkIn = input
        self.networkOut = output
        self.context = context

        let configuration = context.configuration
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

    /// Frees the `SSL *` (and its BIOs) now rather than at deinit.
    func release() {
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
    }

    // MARK: Ciphertext in and out

    func receiveCiphertext(_ buffer: ByteBuffer) {
        guard ssl != nil else { return }
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            // Memory BIOs grow; the write takes everything.
            _ = BIO_write(networkIn, base, Int32(clamping: bytes.count))
        }
    }

    /// Ciphertext received but not yet consumed by OpenSSL.
    var bufferedCiphertextCount: Int {
        guard ssl != nil else { return 0 }
        return Int(BIO_ctrl_pending(networkIn))
    }

    /// Plaintext OpenSSL has decrypted but not handed out yet.
    var bufferedPlaintextCount: Int {
        guard let ssl else { return 0 }
        return Int(SSL_pending(ssl))
    }

    /// Ciphertext produced and not yet taken.
    var bufferedOutgoingCiphertextCount: Int {
        guard ssl != nil else { return 0 }
        return Int(BIO_ctrl_pending(networkOut))
    }

    /// All ciphertext OpenSSL has produced, in one buffer; nil if none.
    func takeCiphertext(allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard ssl != nil else { return nil }
        let pending = Int(BIO_ctrl_pending(networkOut))
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { space in
            Int(max(0, BIO_read(networkOut, space.baseAddress, Int32(clamping: pending))))
        }
        return buffer
    }

    // MARK: TLS operations

    func handshake() -> Step {
        guard let ssl else { return .failed(.closedBeforeHandshake) }
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
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
        if SSL_read_ex(ssl, base, space.count, &count) == 1 {
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

    /// Encrypts all of `buffer` into the outgoing ciphertext.
    func write(_ buffer: ByteBuffer) -> Step {
        guard let ssl else { return .failed(.alreadyClosed) }
        guard buffer.readableBytes > 0 else { return .complete }
        OpenSSLErrorQueue.clear()
        return buffer.withUnsafeReadableBytes { bytes -> Step in
            var written = 0
            if SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &written) == 1 {
                return .complete
            }
            switch SSL_get_error(ssl, 0) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                // Cannot happen with a growing memory BIO and renegotiation off.
                return .incomplete
            default:
                return .failed(.protocolFailure(reason: OpenSSLErrorQueue.drain(fallback: "SSL_write failed")))
            }
        }
    }

    /// Queues our close_notify. `.complete` once both sides' notifications are done.
    func shutdown() -> Step {
        guard let ssl else { return .complete }
        OpenSSLErrorQueue.clear()
        let result = SSL_shutdown(ssl)
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
                return .pinnedCertificateMismatch
            }
            let text = X509_verify_cert_error_string(verifyResult).map { String(cString: $0) }
            return .certificateVerificationFailed(reason: text ?? reason)
        }
        return .handshakeFailed(reason: reason)
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
