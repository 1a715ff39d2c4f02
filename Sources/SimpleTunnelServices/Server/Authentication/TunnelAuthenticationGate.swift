import Logging
import NIOCore

/// Said by the gate once a tunnel's login is accepted.
public struct TunnelAuthenticatedEvent: Sendable {
    public let login: String
}

/// Password authentication before anything else (PROTOCOL.md B2): the first
/// message must be `authenticate`; anything else first, a refused login, or a
/// source with too many recent failures ends the tunnel. The slow hash runs
/// off the event loop through the server's `PasswordChecker`; meanwhile the
/// socket is not read, and the few small messages already read wait
/// (`PendingLoginMessages`) and follow. Once the login is accepted the gate
/// leaves the pipeline.
public final class TunnelAuthenticationGate: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = TunnelInboundMessage
    public typealias InboundOut = TunnelInboundMessage
    public typealias OutboundIn = TunnelMessage
    public typealias OutboundOut = TunnelMessage

    private enum State {
        case awaiting
        case verifying(pending: PendingLoginMessages)
        case accepted
        case refused
    }

    /// Longer passwords are refused unchecked: no one types them, and they would be held while the check waits.
    static let maximumPasswordBytes = 1024

    private let users: any LoginDirectory
    private let limiter: LoginRateLimiter
    private let checker: PasswordChecker
    private let refusals: ThrottledRefusalLog<LoginRefusal>
    private let source: ClientAddressGroup
    private let metrics: TunnelServerMetrics?
    private let peer: TunnelPeer?
    /// Counts the outcomes since start, for `status`.
    private let tunnels: TunnelRegistry?
    /// Takes the login's place among its tunnels; false when it holds as many as it may.
    private let claim: ((String) -> Bool)?
    /// Why a login with the right password may not log in now (disabled, expired); nil: it may.
    private let accessRefusal: ((String) -> LoginAccessRefusal?)?
    private var logger: Logger
    private var state = State.awaiting
    /// A `read()` held back while the password is checked.
    private var readDeferred = false

    init(
        users: any LoginDirectory, limiter: LoginRateLimiter, checker: PasswordChecker, refusals: ThrottledRefusalLog<LoginRefusal>,
        source: ClientAddressGroup, metrics: TunnelServerMetrics? = nil, peer: TunnelPeer? = nil, tunnels: TunnelRegistry? = nil,
        claim: ((String) -> Bool)? = nil, accessRefusal: ((String) -> LoginAccessRefusal?)? = nil, logger: Logger
    ) {
        self.claim = claim
        self.accessRefusal = accessRefusal
        self.users = users
        self.limiter = limiter
        self.checker = checker
        self.refusals = refusals
        self.source = source
        self.metrics = metrics
        self.peer = peer
        self.tunnels = tunnels
        self.logger = logger
    }

    public func read(context: ChannelHandlerContext) {
        guard case .verifying = state else { return context.read() }
        readDeferred = true
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let inbound = unwrapInboundIn(data)
        switch state {
        case .accepted:
            context.fireChannelRead(data)
        case .refused:
            break
        case .verifying(var pending):
            guard pending.hold(inbound) else {
                return refuse(context: context, login: nil, .oversized)
            }
            state = .verifying(pending: pending)
        case .awaiting:
            guard case .message(.authenticate(let login, let password, let offersRetryLater)) = inbound else {
                return refuse(context: context, login: nil, .notFirst)
            }
            guard let attempt = limiter.beginAttempt(source.description) else {
                return refuse(context: context, login: login, .rateLimited)
            }
            guard password.utf8.count <= Self.maximumPasswordBytes else {
                return refuse(context: context, login: login, .oversized)
            }
            // Not a login `passwd` could have made: a failed attempt (counted, as the limiter began it), never looked up.
            guard TunnelLoginSyntax.isValid(login) else {
                return refuse(context: context, login: login, .malformedLogin)
            }
            state = .verifying(pending: PendingLoginMessages())
            let checker = self.checker
            let source = self.source
            let eventLoop = context.eventLoop
            users.records(for: login, on: eventLoop).flatMapError { error in
                eventLoop.makeFailedFuture(error is LoginDirectoryRefusedLogin ? error : LoginDirectoryUnavailable(reason: "\(error)"))
            }
            .flatMap { records in
                checker.check(source: source, on: eventLoop) {
                    records.verify(login: login, password: password)
                }
            }
            .assumeIsolated()
            .whenComplete { [self] result in
                // A right password, or one never checked for want of the server's means, is no failed attempt.
                if case .success(true) = result { limiter.succeeded(attempt) }
                if case .failure(let error) = result, error is PasswordCheckRefusal || error is LoginDirectoryUnavailable {
                    limiter.succeeded(attempt)
                }
                // Already refused (the peer did not wait for the answer): once is enough.
                guard case .verifying = state else { return }
                switch result {
                case .success(true) where users.stillKnows(login):
                    accept(context: context, login: login)
                case .success:
                    // A wrong password, or a user removed by a reload while the password was checked.
                    refuse(context: context, login: login, reason: "wrong login or password")
                case .failure(let refusal as PasswordCheckRefusal):
                    refuse(context: context, login: login, .busy, detail: refusal.description)
                case .failure(let malformed as LoginDirectoryRefusedLogin):
                    refuse(context: context, login: login, .malformedLogin, detail: malformed.reason)
                case .failure(let unavailable as LoginDirectoryUnavailable):
                    metrics?.loginsUnavailable.increment()
                    // Not a refusal: a client that takes result 4 says "try again later"; any other one sees the tunnel close, as before.
                    refuse(
                        context: context, login: login, .directoryUnavailable, detail: unavailable.reason,
                        answer: offersRetryLater ? .timeout : nil)
                case .failure(let error):
                    refuse(context: context, login: login, reason: "the password could not be checked: \(error)", outcome: .unchecked)
                }
            }
        }
    }

    private func accept(context: ChannelHandlerContext, login: String) {
        guard case .verifying(let pending) = state else { return }
        // Asked only once the password is right: a guesser learns nothing of a login's state.
        if let refusal = accessRefusal?(login) {
            return refuse(context: context, login: login, reason: refusal.description, detail: refusal.wireDetail)
        }
        if let claim {
            // The right password, but one tunnel more than this login may hold.
            guard claim(login) else { return refuse(context: context, login: login, .tunnelsPerLogin) }
        } else {
            peer?.loggedIn(as: login)
        }
        state = .accepted
        count(.success)
        logger.info("login accepted", metadata: ["login": "\(PeerText.quoted(login))"])
        context.writeAndFlush(wrapOutboundOut(.authenticateResult(.success)), promise: nil)
        context.fireUserInboundEventTriggered(TunnelAuthenticatedEvent(login: login))
        for message in pending.messages {
            context.fireChannelRead(wrapInboundOut(message))
        }
        if !pending.messages.isEmpty {
            context.fireChannelReadComplete()
        }
        if readDeferred {
            readDeferred = false
            context.read()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// A refusal a peer can cause without a hash: logged through the server's throttle. `answer`
    /// overrides the refusal's own (result 3 when it is answered, none otherwise).
    private func refuse(
        context: ChannelHandlerContext, login: String?, _ refusal: LoginRefusal, detail: String? = nil, answer: TunnelConnectionOpenResult? = nil
    ) {
        var metadata: Logger.Metadata = ["source": "\(source)"]
        if let login { metadata["login"] = "\(PeerText.quoted(login))" }
        if let detail { metadata["detail"] = "\(detail)" }
        refusals.note(refusal, metadata: metadata)
        if !isDecided, let outcome = refusal.outcome { count(outcome) }
        close(context: context, answer: answer ?? (refusal.isAnswered ? .refused : nil))
    }

    /// A refusal after a hash ran: each is logged.
    private func refuse(
        context: ChannelHandlerContext, login: String, reason: String, outcome: LoginOutcome = .failure, detail: TunnelLoginRefusalDetail? = nil
    ) {
        logger.notice("login refused", metadata: ["reason": "\(reason)", "source": "\(source)", "login": "\(PeerText.quoted(login))"])
        if !isDecided { count(outcome) }
        close(context: context, answer: .refused, detail: detail)
    }

    /// Accepted or refused already: the attempt has been counted.
    private var isDecided: Bool {
        switch state {
        case .accepted, .refused: return true
        case .awaiting, .verifying: return false
        }
    }

    private func count(_ outcome: LoginOutcome) {
        metrics?.login(outcome)
        tunnels?.login(outcome)
    }

    /// Ends the tunnel, first sending `answer` if any; a refused login (result 3) is counted.
    private func close(context: ChannelHandlerContext, answer: TunnelConnectionOpenResult?, detail: TunnelLoginRefusalDetail? = nil) {
        switch state {
        case .accepted, .refused: return
        case .awaiting, .verifying: state = .refused
        }
        guard let answer else { return context.close(promise: nil) }
        if answer == .refused { metrics?.authenticationFailures.increment() }
        context.writeAndFlush(wrapOutboundOut(.authenticateResult(answer, detail: detail))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
