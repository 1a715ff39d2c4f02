import Logging
import NIOCore
import ServiceLifecycle

/// Runs a client in a `ServiceGroup`: connects, starts the local listeners
/// it is given, and keeps them until graceful shutdown (SIGINT, SIGTERM) or
/// until the tunnel is lost, which ends the run with an error.
public struct TunnelClientService: Service, CustomStringConvertible {
    public var description: String { "tunnel-client to \(settings.host):\(settings.port)" }

    public typealias Listeners = @Sendable (TunnelClientConnection) async throws -> [@Sendable () async -> Void]

    private let settings: TunnelClientConnection.Settings
    private let group: EventLoopGroup
    private let logger: Logger
    private let startListeners: Listeners

    /// `startListeners` starts what the user asked for and returns how to close each.
    public init(settings: TunnelClientConnection.Settings, group: EventLoopGroup, logger: Logger, startListeners: @escaping Listeners) {
        self.settings = settings
        self.group = group
        self.logger = logger
        self.startListeners = startListeners
    }

    public func run() async throws {
        let tunnel = try await TunnelClientConnection.connect(settings: settings, group: group, logger: logger)
        logger.notice("tunnel up", metadata: ["server": "\(settings.host):\(settings.port)"])
        let closers = try await startListeners(tunnel)
        let stoppedByUser = await withGracefulShutdownHandler {
            try? await tunnel.closeFuture.get()
            return false
        } onGracefulShutdown: {
            Task { await tunnel.close() }
        }
        for close in closers {
            await close()
        }
        await tunnel.close()
        if !stoppedByUser, !Task.isShuttingDownGracefully {
            throw TunnelClientLaunchError("the tunnel to \(settings.host):\(settings.port) was lost")
        }
    }
}
