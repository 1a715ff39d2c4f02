import Logging
import NIOCore
import ServiceLifecycle

/// Runs a `TunnelServer` in a `ServiceGroup`: binds, serves until graceful
/// shutdown (SIGINT, SIGTERM), then stops accepting and closes every tunnel.
public struct TunnelServerService: Service {
    private let settings: TunnelServer.Settings
    private let group: EventLoopGroup
    private let logger: Logger
    private let onListening: @Sendable (TunnelServer) -> Void

    public init(settings: TunnelServer.Settings, group: EventLoopGroup, logger: Logger, onListening: @escaping @Sendable (TunnelServer) -> Void = { _ in }) {
        self.settings = settings
        self.group = group
        self.logger = logger
        self.onListening = onListening
    }

    public func run() async throws {
        let server = try await TunnelServer.start(settings: settings, group: group, logger: logger)
        onListening(server)
        // Serve until asked to stop, or until the listener dies on its own.
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            Task { await server.shutdown() }
        }
        await server.shutdown()
    }
}
