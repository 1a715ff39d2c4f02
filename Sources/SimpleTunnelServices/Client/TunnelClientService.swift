import Logging
import NIOCore
import ServiceLifecycle

/// Runs a client in a `ServiceGroup`: connects, starts the local listeners
/// it is given, and keeps them until graceful shutdown (SIGINT, SIGTERM) or
/// until the tunnel is lost, which ends the run with an error.
public struct TunnelClientService: Service, CustomStringConvertible {
    public var description: String { "tunnel-client to \(settings.host):\(settings.port)" }

    public typealias Listeners = @Sendable (TunnelClientConnection, TunnelClientStatusBoard) async throws -> [@Sendable () async -> Void]

    private let settings: TunnelClientConnection.Settings
    private let group: EventLoopGroup
    private let logger: Logger
    private let startListeners: Listeners
    private let controlPath: String?
    /// An explicit `--control` must work; the default may be taken by another client.
    private let controlPathIsRequired: Bool
    /// The client's state, as `status` shows it.
    public let status: TunnelClientStatusBoard

    /// `startListeners` starts what the user asked for and returns how to close each;
    /// with `controlPath`, `tunnel-client status` and `stop` can reach this client there.
    public init(
        settings: TunnelClientConnection.Settings, group: EventLoopGroup, logger: Logger, controlPath: String? = nil,
        controlPathIsRequired: Bool = true, startListeners: @escaping Listeners
    ) {
        self.controlPathIsRequired = controlPathIsRequired
        self.settings = settings
        self.group = group
        self.logger = logger
        self.controlPath = controlPath
        self.startListeners = startListeners
        self.status = TunnelClientStatusBoard(server: TunnelEndpoint(host: settings.host, port: settings.port).description)
    }

    public func run() async throws {
        let status = self.status
        var control: ControlServer?
        if let controlPath {
            do {
                control = try await ControlServer.start(path: controlPath, handlers: Self.controlHandlers(status), group: group, logger: logger)
            } catch ControlError.socketInUse(let path) where !controlPathIsRequired {
                logger.warning("another tunnel-client answers on \(path): this one has no control socket (give it --control PATH)")
            }
        }
        defer { status.set(.disconnected) }
        status.set(.connecting)
        let tunnel: TunnelClientConnection
        do {
            tunnel = try await TunnelClientConnection.connect(settings: settings, group: group, logger: logger)
        } catch {
            status.failed(error)
            await control?.close()
            throw error
        }
        status.connected(tunnel)
        logger.notice("tunnel up", metadata: ["server": "\(settings.host):\(settings.port)"])
        let closers = try await startListeners(tunnel, status)
        await withGracefulShutdownHandler {
            try? await tunnel.closeFuture.get()
        } onGracefulShutdown: {
            Task { await tunnel.close() }
        }
        let stoppedByUser = status.stopRequested || Task.isShuttingDownGracefully
        status.set(.disconnecting)
        for close in closers {
            await close()
        }
        await tunnel.close()
        await control?.close()
        if !stoppedByUser {
            let error = TunnelClientLaunchError("the tunnel to \(settings.host):\(settings.port) was lost")
            status.failed(error)
            throw error
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
