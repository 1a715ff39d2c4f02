import Foundation
import Logging
import NIOCore
import NIOPosix

/// The running client's control socket: a Unix domain socket (mode 0600, in a
/// folder only its user can enter) where requests are routed by `type` to
/// registered handlers. Connections from other users are refused.
public final class ControlServer: Sendable {
    public typealias Handler = @Sendable (ControlProtocol.Request) async -> ControlProtocol.Response

    public let path: String
    private let channel: Channel

    private init(path: String, channel: Channel) {
        self.path = path
        self.channel = channel
    }

    public static func start(path: String, handlers: [String: Handler], group: EventLoopGroup, logger: Logger) async throws -> ControlServer {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try await removeStaleSocket(at: path, group: group)
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(ControlRequestHandler(handlers: handlers, logger: logger))
                }
            }
            .bind(unixDomainSocketPath: path)
            .get()
        chmod(path, 0o600)
        logger.info("control socket at \(path)")
        return ControlServer(path: path, channel: channel)
    }

    /// A socket file nobody answers on is left over from a client that died; one that answers is in use.
    private static func removeStaleSocket(at path: String, group: EventLoopGroup) async throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        if let live = try? await ClientBootstrap(group: group).connect(unixDomainSocketPath: path).get() {
            try? await live.close()
            throw ControlError.socketInUse(path)
        }
        unlink(path)
    }

    /// Unlinks first: a client waiting to take the path over may bind it as
    /// soon as nobody answers, and must not lose its new socket to this unlink.
    public func close() async {
        unlink(path)
        try? await channel.close()
    }
}

/// Answers one request per connection, after checking who is asking.
private final class ControlRequestHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let handlers: [String: ControlServer.Handler]
    private let logger: Logger
    private var allowed = false

    init(handlers: [String: ControlServer.Handler], logger: Logger) {
        self.handlers = handlers
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        // Only this user (or root) may steer this client.
        PeerCredentials.userID(of: context.channel).assumeIsolated().whenComplete { [self] result in
            let user = try? result.get()
            allowed = user.map { $0 == getuid() || $0 == 0 } ?? false
            if !allowed {
                logger.warning("control socket: refusing a connection from user \(user.map(String.init) ?? "unknown")")
                context.close(promise: nil)
            }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard allowed else { return }
        let payload = unwrapInboundIn(data)
        let request = try? JSONDecoder().decode(ControlProtocol.Request.self, from: Data(payload.readableBytesView))
        let handler = request.flatMap { handlers[$0.type] }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let known = handlers.keys.sorted().joined(separator: ", ")
        Task {
            let response: ControlProtocol.Response
            if let request, let handler {
                response = await handler(request)
            } else if let request {
                response = .init(ok: false, error: "unknown request type \"\(request.type)\"; known: \(known)")
            } else {
                response = .init(ok: false, error: "a request is a JSON object with a \"type\"; known: \(known)")
            }
            let bytes = (try? JSONEncoder().encode(response)) ?? Data()
            bound.eventLoop.execute {
                let context = bound.value
                context.writeAndFlush(NIOAny(ControlProtocol.frame(bytes))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.notice("control socket: \(error)")
        context.close(promise: nil)
    }
}

/// The user id of the process at the other end of a Unix socket (SO_PEERCRED).
enum PeerCredentials {
    /// Linux's `struct ucred`, which Swift's Glibc module does not export.
    private struct Credentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    static func userID(of channel: Channel) -> EventLoopFuture<uid_t> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<Credentials> = provider.unsafeGetSocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return credentials.map { uid_t($0.uid) }
    }
}
