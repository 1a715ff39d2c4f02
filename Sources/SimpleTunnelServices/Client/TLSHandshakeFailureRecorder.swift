import NIOConcurrencyHelpers
import NIOCore
import NIOTLS

/// Keeps the TLS error that ended a client's connection before the tunnel
/// came up, so that connecting fails with the real reason (an untrusted
/// certificate, a pin mismatch) rather than only "closed". Leaves the
/// pipeline once the handshake is done.
///
/// A server that closes during the handshake, or never answers it within
/// `stallTimeout`, is reported with what it most likely is: a `--plaintext`
/// server (which closes a ClientHello at once), or something else entirely.
final class TLSHandshakeFailureRecorder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let failure: NIOLockedValueBox<TLSError?>
    private let stallTimeout: TimeAmount
    private var stallTimer: Scheduled<Void>?

    init(into failure: NIOLockedValueBox<TLSError?>, stallTimeout: TimeAmount = .seconds(10)) {
        self.failure = failure
        self.stallTimeout = stallTimeout
    }

    static let closedHint = TLSError.handshakeFailed(
        reason: "the server closed the connection before answering the TLS handshake; it may be running with --plaintext "
            + "(then connect with --plaintext), or be refusing connections from this address for now (its log says which)")

    func channelActive(context: ChannelHandlerContext) {
        let seconds = stallTimeout.nanoseconds / 1_000_000_000
        let failure = self.failure
        stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: stallTimeout) {
            failure.withLockedValue {
                $0 = $0 ?? .handshakeFailed(
                    reason: "no TLS answer from the server within \(seconds) s; it may be running with --plaintext "
                        + "(then connect with --plaintext), or not be a tunnel-server")
            }
            context.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stallTimer?.cancel()
        failure.withLockedValue { recorded in
            if recorded == nil || recorded == .closedBeforeHandshake { recorded = Self.closedHint }
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stallTimer?.cancel()
    }

    /// A TLS error is kept here, not passed on: connecting fails with it, and
    /// that is where it is reported. Passed on, the tunnel handler would log it
    /// as well, and the user would read the same failure twice. TLSHandler
    /// closes the channel itself.
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let error = error as? TLSError else {
            context.fireErrorCaught(error)
            return
        }
        failure.withLockedValue { $0 = $0 ?? error }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }
}

extension TLSError {
    /// A failure that another attempt with the same settings cannot cure.
    var isPermanent: Bool {
        switch self {
        case .certificateVerificationFailed, .certificateNotTrustedBySystem, .serverNameMismatch, .pinnedCertificateMismatch, .invalidConfiguration:
            return true
        default: return false
        }
    }
}
