import Logging
import NIOCore
import NIOPosix

/// Said by the gate once a tunnel's login is accepted.
public struct TunnelAuthenticatedEvent: Sendable {
    public let login: String
}

/// Password authentication before anything else (PROTOCOL.md B2): the first
/// message must be `authenticate`; anything else first, a refused login, or a
/// source with too many recent failures ends the tunnel. The slow hash runs
/// off the event loop; messages that arrive meanwhile wait (a few) and follow.
/// Once the login is accepted the gate leaves the pipeline.
public final class TunnelAuthenticationGate: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = TunnelInboundMessage
    public typealias InboundOut = TunnelInboundMessage
    public typealias OutboundOut = TunnelMessage

    private enum State {
        case awaiting
        case verifying(waiting: [TunnelInboundMessage])
        case accepted
        case refused
    }

    /// Messages held while the password is checked; more means the peer is not waiting for the answer.
    static let maximumWaiting = 64

    private let users: UserDatabase
    private let limiter: LoginRateLimiter
    private let source: String
    private let threadPool: NIOThreadPool
    private let metrics: TunnelServerMetrics?
    private let peer: TunnelPeer?
    private var logger: Logger
    private var state = State.awaiting

    public init(
        users: UserDatabase, limiter: LoginRateLimiter, source: String, threadPool: NIOThreadPool = .singleton,
        metrics: TunnelServerMetrics? = nil, peer: TunnelPeer? = nil, logger: Logger
    ) {
        self.metrics = metrics
        self.peer = peer
        self.users = users
        self.limiter = limiter
        self.source = source
        self.threadPool = threadPool
        self.logger = logger
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let inbound = unwrapInboundIn(data)
        switch state {
        case .accepted:
            context.fireChannelRead(data)
        case .refused:
            break
        case .verifying(var waiting):
            guard waiting.count < Self.maximumWaiting else {
                return refuse(context: context, login: nil, reason: "more than \(Self.maximumWaiting) messages before the login was answered")
            }
            waiting.append(inbound)
            state = .verifying(waiting: waiting)
        case .awaiting:
            guard case .message(.authenticate(let login, let password)) = inbound else {
                state = .refused
                logger.notice("closing tunnel", metadata: ["reason": "this server requires authenticate as the first message"])
                context.close(promise: nil)
                return
            }
            guard limiter.allows(source) else {
                return refuse(context: context, login: login, reason: "too many failed logins from \(source); try again later")
            }
            state = .verifying(waiting: [])
            let users = self.users
            threadPool.runIfActive(eventLoop: context.eventLoop) {
                users.verify(login: login, password: password)
            }
            .assumeIsolated()
            .whenComplete { [self] result in
                if case .success(true) = result {
                    accept(context: context, login: login)
                } else {
                    limiter.recordFailure(source)
                    // Already refused (the peer did not wait for the answer): once is enough.
                    guard case .verifying = state else { return }
                    refuse(context: context, login: login, reason: "wrong login or password")
                }
            }
        }
    }

    private func accept(context: ChannelHandlerContext, login: String) {
        guard case .verifying(let waiting) = state else { return }
        state = .accepted
        logger.info("login accepted", metadata: ["login": "\(login)"])
        peer?.loggedIn(as: login)
        context.writeAndFlush(wrapOutboundOut(.authenticateResult(.success)), promise: nil)
        context.fireUserInboundEventTriggered(TunnelAuthenticatedEvent(login: login))
        for message in waiting {
            context.fireChannelRead(wrapInboundOut(message))
        }
        if !waiting.isEmpty {
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func refuse(context: ChannelHandlerContext, login: String?, reason: String) {
        state = .refused
        metrics?.authenticationFailures.increment()
        var metadata: Logger.Metadata = ["reason": "\(reason)", "source": "\(source)"]
        if let login { metadata["login"] = "\(login)" }
        logger.notice("login refused", metadata: metadata)
        context.writeAndFlush(wrapOutboundOut(.authenticateResult(.refused))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
