import Logging
import NIOCore
import ServiceLifecycle

/// Runs a client in a `ServiceGroup`: connects, starts the local offers it
/// is given, and keeps them until graceful shutdown (SIGINT, SIGTERM) or
/// `tunnel-client stop`. When the tunnel drops, the client is `reasserting`:
/// it reconnects with backoff, keeps its listeners (connections accepted
/// meanwhile are closed) and carries its offers over to the new tunnel; with
/// `reconnect` nil (`--once`) a lost tunnel ends the run with an error.
public struct TunnelClientService: Service, CustomStringConvertible {
    public var description: String { "tunnel-client to \(settings.host):\(settings.port)" }

    /// Something the client offers locally, started once when the first tunnel is up.
    public struct LocalOffer: Sendable {
        /// Carries the offer over to a new tunnel; an error makes that reconnection attempt fail.
        public var reattach: @Sendable (TunnelClientConnection) async throws -> Void
        public var close: @Sendable () async -> Void

        public init(close: @escaping @Sendable () async -> Void, reattach: @escaping @Sendable (TunnelClientConnection) async throws -> Void = { _ in }) {
            self.close = close
            self.reattach = reattach
        }
    }

    public typealias Offers = @Sendable (CurrentTunnel, TunnelClientStatusBoard) async throws -> [LocalOffer]

    private let settings: TunnelClientConnection.Settings
    private let group: EventLoopGroup
    private let logger: Logger
    private let startOffers: Offers
    private let controlPath: String?
    /// An explicit `--control` must work; the default may be taken by another client.
    private let controlPathIsRequired: Bool
    private let reconnect: ReconnectBackoff?
    /// Whether the offers need a tunnel to start (the IP tunnel does); listeners
    /// do not, and are bound first so that a taken port fails at once, as with ssh.
    private let offersNeedTunnel: Bool
    /// The client's state, as `status` shows it.
    public let status: TunnelClientStatusBoard

    /// `startOffers` starts what the user asked for; with `controlPath`,
    /// `tunnel-client status` and `stop` can reach this client there.
    public init(
        settings: TunnelClientConnection.Settings, group: EventLoopGroup, logger: Logger, controlPath: String? = nil,
        controlPathIsRequired: Bool = true, reconnect: ReconnectBackoff? = ReconnectBackoff(), offersNeedTunnel: Bool = true,
        startOffers: @escaping Offers
    ) {
        self.offersNeedTunnel = offersNeedTunnel
        self.controlPathIsRequired = controlPathIsRequired
        self.settings = settings
        self.group = group
        self.logger = logger
        self.controlPath = controlPath
        self.reconnect = reconnect
        self.startOffers = startOffers
        self.status = TunnelClientStatusBoard(server: TunnelEndpoint(host: settings.host, port: settings.port).description)
    }

    public func run() async throws {
        let status = self.status
        let control = try await startControlServer()
        defer { status.set(.disconnected) }
        // One event loop for every tunnel of this run, so that listeners started once can use each.
        let current = CurrentTunnel(eventLoop: group.next())
        let stopped = current.eventLoop.makePromise(of: Void.self)
        status.onStop { stopped.succeed() }
        var tunnel: TunnelClientConnection?
        var offers: [LocalOffer] = []
        var failure: Error?
        var shortLived = ShortLivedTunnels()
        await withGracefulShutdownHandler {
            do {
                // What the user asked for starts once; a failure here is a mistake to report, not to retry.
                if !offersNeedTunnel {
                    offers = try await startOffers(current, status)
                }
                status.set(.connecting)
                tunnel = try await bringUp(current: current, offers: [], afterLoss: false, stopped: stopped.futureResult)?.tunnel
                guard tunnel != nil else { return }
                if offersNeedTunnel {
                    offers = try await startOffers(current, status)
                }
                // Where the tunnel went last; kept over attempts whose tunnel never told (none should).
                var serverAddress: String?
                while let up = tunnel {
                    serverAddress = up.serverAddress?.ipAddress ?? serverAddress
                    let upSince = NIODeadline.now()
                    try? await up.closeFuture.get()
                    current.set(nil)
                    shortLived.tunnelLost(after: NIODeadline.now() - upSince)
                    if status.stopRequested { return }
                    let lost = TunnelClientLaunchError("the tunnel to \(status.server) was lost")
                    status.failed(lost)
                    guard reconnect != nil else { throw lost }
                    status.set(.reasserting)
                    logger.warning("tunnel lost; reconnecting (forwards and proxies stay; connections open now are closed)", metadata: ["server": "\(status.server)"])
                    if let warning = shortLived.warning {
                        logger.warning("\(warning)", metadata: ["server": "\(status.server)"])
                    }
                    guard let next = try await bringUp(
                        current: current, offers: offers, afterLoss: true, stopped: stopped.futureResult, address: serverAddress,
                        earlierLosses: shortLived.inARow - 1
                    ) else { return }
                    shortLived.reconnected(attempts: next.attempts)
                    tunnel = next.tunnel
                }
            } catch {
                failure = error
            }
        } onGracefulShutdown: {
            status.requestStop()
        }
        status.set(.disconnecting)
        for offer in offers {
            await offer.close()
        }
        await tunnel?.close()
        await control?.close()
        stopped.succeed()
        if let failure {
            status.failed(failure)
            throw failure
        }
    }

    /// Connects, carries `offers` over to the new tunnel and makes it current.
    /// Failed attempts are retried with backoff (the first one at once),
    /// unless reconnection is off or, before any tunnel was up, the failure is
    /// one no retry can cure (`ReconnectFailure`). Nil when stopped meanwhile.
    ///
    /// `address` is where the lost tunnel went: reconnections go there, not to
    /// the name again, because while a full tunnel is down its DNS servers are
    /// out of reach (the name is still what TLS verifies).
    ///
    /// `earlierLosses` counts the short-lived tunnels before this loss: each
    /// doubles the first wait, so a fight over one identity slows to the
    /// backoff's maximum instead of flapping.
    private func bringUp(
        current: CurrentTunnel, offers: [LocalOffer], afterLoss: Bool, stopped: EventLoopFuture<Void>, address: String? = nil,
        earlierLosses: Int = 0
    ) async throws -> (tunnel: TunnelClientConnection, attempts: Int)? {
        let settings = self.settings.reconnecting(to: address)
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            attempt += 1
            // After a loss even the first attempt waits a little, so clients cut off together spread out.
            if let reconnect, afterLoss || attempt > 1 {
                let step = afterLoss ? attempt + max(earlierLosses, 0) : attempt - 1
                await Self.wait(reconnect.delay(beforeAttempt: step, using: &generator), unless: stopped, on: current.eventLoop)
            }
            if status.stopRequested { return nil }
            var candidate: TunnelClientConnection?
            do {
                let tunnel = try await TunnelClientConnection.connect(settings: settings, group: current.eventLoop, logger: logger)
                candidate = tunnel
                for offer in offers {
                    try await offer.reattach(tunnel)
                }
                current.set(tunnel)
                status.connected(tunnel)
                logger.notice(afterLoss ? "tunnel up again" : "tunnel up", metadata: ["server": "\(status.server)", "attempts": "\(attempt)"])
                return (tunnel, attempt)
            } catch {
                await candidate?.close()
                status.failed(error)
                guard reconnect != nil, case .retry(let reason) = ReconnectFailure.decide(error, afterLoss: afterLoss) else { throw error }
                if error is TunnelLoginUnavailableError {
                    // Said plainly: the operator's database is away, the user's login is not wrong.
                    logger.warning("the server cannot check logins now (its database is unavailable); retrying", metadata: ["attempt": "\(attempt)"])
                    continue
                }
                logger.notice("could not bring the tunnel up; trying again", metadata: ["attempt": "\(attempt)", "reason": "\(reason)"])
            }
        }
    }

    /// Waits for `delay`, or less if `stopped` completes first.
    private static func wait(_ delay: TimeAmount, unless stopped: EventLoopFuture<Void>, on eventLoop: EventLoop) async {
        let woken = eventLoop.makePromise(of: Void.self)
        let timer = eventLoop.scheduleTask(in: delay) { woken.succeed() }
        stopped.whenComplete { _ in
            timer.cancel()
            woken.succeed()
        }
        try? await woken.futureResult.get()
    }

    private func startControlServer() async throws -> ControlSocketClaim? {
        guard let controlPath else { return nil }
        return try await ControlSocketClaim.start(
            path: controlPath, required: controlPathIsRequired, handlers: Self.controlHandlers(status),
            afterAnswer: ["stop": { [status] in status.requestStop() }], group: group, logger: logger)
    }

    /// `status` and `stats` answer with the state; `stop` answers too, and once
    /// that answer is written ends the client as SIGTERM would.
    static func controlHandlers(_ status: TunnelClientStatusBoard) -> [String: ControlServer.Handler] {
        let report: ControlServer.Handler = { _ in .init(ok: true, status: await status.snapshot()) }
        return ["status": report, "stats": report, "stop": report]
    }
}
