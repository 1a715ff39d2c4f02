import Logging
import NIOCore
import NIOTLS

/// Holds a connection's place among the unauthenticated ones until it
/// becomes a tunnel: at its first valid message, or at its login when the
/// server requires one. Until then it also gives TLS a deadline of its own,
/// shorter than the first-message timeout, so idle sockets go sooner, and
/// the whole startup one too: messages that are not valid do not make a
/// connection a tunnel, so without it they could hold the place for good.
/// Sits after the codec (and the login gate), and leaves the pipeline once
/// the connection is a tunnel.
final class StartupAdmissionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = TunnelInboundMessage
    typealias InboundOut = TunnelInboundMessage

    private let admission: ConnectionAdmission
    private let ticket: AdmissionTicket
    private let tlsHandshakeTimeout: TimeAmount?
    private let startupTimeout: TimeAmount
    private let requiresLogin: Bool
    private let logger: Logger
    private var handshakeTimer: Scheduled<Void>?
    private var startupTimer: Scheduled<Void>?
    private var promoted = false
    private var leaving = false

    /// - Parameters:
    ///   - tlsHandshakeTimeout: nil for a plaintext listener.
    ///   - startupTimeout: time from accept to promotion (the first-message timeout).
    ///   - requiresLogin: promote at `TunnelAuthenticatedEvent` instead of the first message.
    init(
        admission: ConnectionAdmission, ticket: AdmissionTicket, tlsHandshakeTimeout: TimeAmount?, startupTimeout: TimeAmount, requiresLogin: Bool,
        logger: Logger
    ) {
        self.logger = logger
        self.startupTimeout = startupTimeout
        self.admission = admission
        self.ticket = ticket
        self.tlsHandshakeTimeout = tlsHandshakeTimeout
        self.requiresLogin = requiresLogin
    }

    func handlerAdded(context: ChannelHandlerContext) {
        startupTimer = deadline(startupTimeout, .startupTimeout, context: context)
        handshakeTimer = tlsHandshakeTimeout.map { deadline($0, .tlsHandshakeTimeout, context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        startupTimer?.cancel()
    }

    private func deadline(_ timeout: TimeAmount, _ refusal: AdmissionRefusal, context: ChannelHandlerContext) -> Scheduled<Void> {
        context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [admission] in
            admission.refused(refusal)
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            handshakeTimer?.cancel()
            handshakeTimer = nil
        }
        if event is TunnelAuthenticatedEvent, !promote(context: context) { return }
        context.fireUserInboundEventTriggered(event)
        leaveIfPromoted(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !requiresLogin, case .message = unwrapInboundIn(data), !promote(context: context) { return }
        context.fireChannelRead(data)
        leaveIfPromoted(context: context)
    }

    /// False, and the connection closes, when the server has no room for another tunnel.
    private func promote(context: ChannelHandlerContext) -> Bool {
        guard !promoted else { return true }
        guard admission.promote(ticket) else {
            context.close(promise: nil)
            return false
        }
        promoted = true
        handshakeTimer?.cancel()
        startupTimer?.cancel()
        // Logged here rather than at accept: connections that never get this far are a peer's to multiply.
        logger.info("tunnel connected")
        return true
    }

    private func leaveIfPromoted(context: ChannelHandlerContext) {
        guard promoted, !leaving else { return }
        leaving = true
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
