import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The last handler of a tunnel's pipeline: hands decoded messages to the
/// tunnel's `TunnelMultiplexer` and lets it write messages back. Ends the
/// tunnel on a fault that B5 says ends it, logging the reason.
public final class TunnelChannelHandler: ChannelDuplexHandler, TunnelOutput {
    public typealias InboundIn = TunnelInboundMessage
    public typealias OutboundIn = TunnelMessage
    public typealias OutboundOut = TunnelMessage

    private let makeRole: () -> TunnelMultiplexer.Role
    private let limits: TunnelMultiplexer.Limits
    private var liveness: LivenessMonitor
    private let metrics: (any TunnelMultiplexerMetrics)?
    private let serverBudget: ServerBufferBudget?
    private var livenessCheck: Scheduled<Void>?
    private var logger: Logger
    private var context: ChannelHandlerContext?
    private var receivedAny = false
    private var onActive: ((TunnelMultiplexer) -> Void)?
    private var closeReason: String?
    /// A read NIO asked for while the multiplexer held the peer back.
    private var readHeld = false

    /// The tunnel's multiplexer; exists once the handler is in a pipeline.
    public private(set) var multiplexer: TunnelMultiplexer?

    /// The last keepalive probe's round trip (client side).
    public var roundTrip: TimeAmount? { liveness.roundTrip }

    /// - Parameters:
    ///   - onActive: called once the multiplexer exists and the tunnel is active.
    public init(
        role: @escaping () -> TunnelMultiplexer.Role,
        limits: TunnelMultiplexer.Limits = .init(),
        liveness: LivenessMonitor.Policy = .init(),
        metrics: (any TunnelMultiplexerMetrics)? = nil,
        serverBudget: ServerBufferBudget? = nil,
        logger: Logger,
        onActive: ((TunnelMultiplexer) -> Void)? = nil
    ) {
        self.makeRole = role
        self.limits = limits
        self.liveness = LivenessMonitor(policy: liveness, now: .now())
        self.metrics = metrics
        self.serverBudget = serverBudget
        self.logger = logger
        self.onActive = onActive
    }

    // MARK: TunnelOutput

    public var isWritable: Bool { context?.channel.isWritable ?? false }

    public func write(_ message: TunnelMessage) {
        context?.write(wrapOutboundOut(message), promise: nil)
    }

    public func flush() {
        context?.flush()
    }

    // MARK: Pipeline

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let multiplexer = TunnelMultiplexer(role: makeRole(), output: self, eventLoop: context.eventLoop, limits: limits, metrics: metrics, serverBudget: serverBudget, logger: logger)
        self.multiplexer = multiplexer
        if context.channel.isActive {
            becameActive()
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        multiplexer?.tunnelClosed()
        self.context = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        becameActive()
        context.fireChannelActive()
    }

    private func becameActive() {
        scheduleLivenessCheck()
        guard let multiplexer, let onActive else { return }
        self.onActive = nil
        onActive(multiplexer)
    }

    private func scheduleLivenessCheck() {
        guard livenessCheck == nil, let interval = liveness.policy.checkInterval, let context else { return }
        livenessCheck = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in
            self?.checkLiveness()
        }
    }

    private func checkLiveness() {
        livenessCheck = nil
        switch liveness.tick(at: .now(), holdsFlows: multiplexer?.holdsFlows ?? false) {
        case .nothing:
            break
        case .sendProbe:
            multiplexer?.fetchConfiguration { [weak self] result in
                if case .success = result {
                    self?.liveness.probeAnswered(at: .now())
                }
            }
        case .peerDead(let reason):
            closeTunnel(reason: reason)
            return
        }
        scheduleLivenessCheck()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let authenticated = event as? any TunnelLoginEvent {
            // A login is a first message; every later line names who logged in.
            receivedAny = true
            logger[metadataKey: "login"] = "\(PeerText.quoted(authenticated.login))"
            multiplexer?.logger = logger
        }
        if let session = (event as? TLSSessionEstablishedEvent)?.session {
            // Every later line of this tunnel names who is at the other end.
            logger[metadataKey: "tls"] = "\(session.protocolVersion) \(session.cipher)"
            if let subject = session.peerCertificateSubject, session.peerCertificateVerified {
                logger[metadataKey: "tls-subject"] = "\(PeerText.quoted(subject, limit: 256))"
            }
            multiplexer?.logger = logger
            logger.info("TLS established")
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receivedAny = true
        multiplexer?.receive(unwrapInboundIn(data))
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        // Once per burst is enough to know the peer is alive.
        liveness.heard(at: .now())
        multiplexer?.peerReadBurstEnded()
        context.fireChannelReadComplete()
    }

    /// The peer is read only while what it makes the multiplexer hold stays
    /// within budget (early data, replies it does not read).
    public func read(context: ChannelHandlerContext) {
        if multiplexer?.budgets.wantsPeerReads ?? true {
            context.read()
        } else {
            readHeld = true
        }
    }

    public func peerReadingChanged(_ reading: Bool) {
        guard reading, readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        multiplexer?.tunnelWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        if let multiplexer {
            let statistics = multiplexer.currentStatistics
            multiplexer.tunnelClosed()
            var metadata: Logger.Metadata = [
                "bytes-from-peer": "\(statistics.bytesFromPeer)",
                "bytes-to-peer": "\(statistics.bytesToPeer)",
                "flows-opened": "\(statistics.flowsOpened)",
            ]
            if let closeReason {
                metadata["reason"] = "\(closeReason)"
            }
            // A connection that never became a tunnel has said why it closed already, if at all.
            logger.log(level: receivedAny ? .info : .debug, "tunnel closed", metadata: metadata)
        }
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        closeTunnel(reason: String(describing: error))
    }

    /// Connections that never became tunnels (failed handshakes, silent
    /// sockets) can come as fast as a peer opens them: their closing lines share
    /// one limit across the server.
    private static let unstartedCloseLog = NIOLockedValueBox(LineRateLimiter(interval: .seconds(10)))

    /// Ends the tunnel, logging why (once).
    public func closeTunnel(reason: String) {
        guard closeReason == nil, let context else { return }
        closeReason = reason
        if receivedAny {
            logger.notice("closing tunnel", metadata: ["reason": "\(reason)"])
        } else if let suppressed = Self.unstartedCloseLog.withLockedValue({ $0.admit() }) {
            logger.notice(
                "closing connection before its first message", metadata: ["reason": "\(reason)", "suppressed": "\(suppressed)"])
        }
        context.close(promise: nil)
    }
}
