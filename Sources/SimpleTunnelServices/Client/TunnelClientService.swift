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
    /// The client's state, as `status` shows it.
    public let status: TunnelClientStatusBoard

    /// `startOffers` starts what the user asked for; with `controlPath`,
    /// `tunnel-client status` and `stop` can reach this client there.
    public init(
        settings: TunnelClientConnection.Settings, group: EventLoopGroup, logger: Logger, controlPath: String? = nil,
        controlPathIsRequired: Bool = true, reconnect: ReconnectBackoff? = ReconnectBackoff(), startOffers: @escaping Offers
    ) {
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
        status.set(.connecting)
        var tunnel: TunnelClientConnection
        let offers: [LocalOffer]
        do {
            tunnel = try await TunnelClientConnection.connect(settings: settings, group: current.eventLoop, logger: logger)
            current.set(tunnel)
            status.connected(tunnel)
            logger.notice("tunnel up", metadata: ["server": "\(status.server)"])
            offers = try await startOffers(current, status)
        } catch {
            status.failed(error)
            await current.connection?.close()
            await control?.close()
            throw error
        }
        var failure: Error?
        await withGracefulShutdownHandler {
            while true {
                try? await tunnel.closeFuture.get()
                current.set(nil)
                if status.stopRequested { return }
                let lost = TunnelClientLaunchError("the tunnel to \(status.server) was lost")
                status.failed(lost)
                guard let reconnect else {
                    failure = lost
                    return
                }
                status.set(.reasserting)
                logger.warning("tunnel lost; reconnecting (forwards and proxies stay; connections open now are closed)", metadata: ["server": "\(status.server)"])
                do {
                    guard let next = try await self.reconnect(current: current, offers: offers, backoff: reconnect, stopped: stopped.futureResult) else {
                        return
                    }
                    tunnel = next
                } catch {
                    failure = error
                    return
                }
            }
        } onGracefulShutdown: {
            status.requestStop()
        }
        status.set(.disconnecting)
        for offer in offers {
            await offer.close()
        }
        await tunnel.close()
        await control?.close()
        stopped.succeed()
        if let failure {
            status.failed(failure)
            throw failure
        }
    }

    /// Tries until a tunnel is up again and every offer is carried over to it;
    /// nil when stopped meanwhile; throws when the server refuses the login.
    private func reconnect(
        current: CurrentTunnel, offers: [LocalOffer], backoff: ReconnectBackoff, stopped: EventLoopFuture<Void>
    ) async throws -> TunnelClientConnection? {
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            attempt += 1
            let delay = backoff.delay(beforeAttempt: attempt, using: &generator)
            await Self.wait(delay, unless: stopped, on: current.eventLoop)
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
                logger.notice("tunnel up again", metadata: ["server": "\(status.server)", "attempts": "\(attempt)"])
                return tunnel
            } catch let refused as TunnelLoginRefusedError {
                await candidate?.close()
                throw refused
            } catch {
                await candidate?.close()
                status.failed(error)
                logger.notice("reconnection failed", metadata: ["attempt": "\(attempt)", "reason": "\(error)"])
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

    private func startControlServer() async throws -> ControlServer? {
        guard let controlPath else { return nil }
        do {
            return try await ControlServer.start(path: controlPath, handlers: Self.controlHandlers(status), group: group, logger: logger)
        } catch ControlError.socketInUse(let path) where !controlPathIsRequired {
            logger.warning("another tunnel-client answers on \(path): this one has no control socket (give it --control PATH)")
            return nil
        }
    }

    /// `status` and `stats` answer with the state; `stop` ends the client as SIGTERM would.
    static func controlHandlers(_ status: TunnelClientStatusBoard) -> [String: ControlServer.Handler] {
        let report: ControlServer.Handler = { _ in .init(ok: true, status: await status.snapshot()) }
        return [
            "status": report,
            "stats": report,
            "stop": { _ in
                status.requestStop()
                return .init(ok: true, status: await status.snapshot())
            },
        ]
    }
}
