import NIOConcurrencyHelpers
import NIOCore
import NIOTLS

/// Keeps the TLS error that ended a client's connection before the tunnel
/// came up, so that connecting fails with the real reason (an untrusted
/// certificate, a pin mismatch) rather than only "closed". Leaves the
/// pipeline once the handshake is done.
final class TLSHandshakeFailureRecorder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let failure: NIOLockedValueBox<TLSError?>

    init(into failure: NIOLockedValueBox<TLSError?>) {
        self.failure = failure
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let error = error as? TLSError {
            failure.withLockedValue { $0 = $0 ?? error }
        }
        context.fireErrorCaught(error)
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
        case .certificateVerificationFailed, .certificateNotTrustedBySystem, .pinnedCertificateMismatch, .invalidConfiguration: return true
        default: return false
        }
    }
}
