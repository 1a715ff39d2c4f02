import Foundation
import Logging
import NIOCore
import NIOPosix

/// A control socket: a Unix domain socket (mode 0600, in a folder no one else
/// may write to: `ControlSocketFolder`) answering one JSON request per
/// connection. Only root and the process's own user are answered; others are
/// closed unread, and logged.
public final class ControlSocketServer: Sendable {
    /// Turns one request's JSON into the response's JSON.
    public typealias Answer = @Sendable (Data) async -> Data

    public let path: String
    private let channel: Channel

    private init(path: String, channel: Channel) {
        self.path = path
        self.channel = channel
    }

    /// - Parameters:
    ///   - owner: when started as root for a service that then becomes another user, that user:
    ///     the socket and a folder created for it are handed to them, so the service user may ask too.
    ///   - program: who answers, for the error when another one already does.
    ///   - afterAnswer: given the request once its answer is written (or could not be): what must
    ///     not happen before the asker has its answer, such as stopping the process, starts here.
    public static func start(
        path: String, owner: (uid: uid_t, gid: gid_t)? = nil, program: String, group: EventLoopGroup, logger: Logger,
        afterAnswer: @escaping @Sendable (Data) -> Void = { _ in }, answer: @escaping Answer
    ) async throws -> ControlSocketServer {
        let parent = (path as NSString).deletingLastPathComponent
        let folder = try ControlSocketBinding.openFolder(parent.isEmpty ? "." : parent, owner: owner)
        defer { Glibc.close(folder) }
        try await removeStaleSocket(at: path, in: folder, program: program, group: group)
        let socket = try ControlSocketBinding.listen(at: path, in: folder, owner: owner)
        let channel: Channel
        do {
            channel = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(ControlRequestHandler(answer: answer, afterAnswer: afterAnswer, logger: logger))
                    }
                }
                .withBoundSocket(socket)
                .get()
        } catch {
            unlink(path)
            throw error
        }
        logger.info("control socket at \(path)")
        return ControlSocketServer(path: path, channel: channel)
    }

    /// A socket file nobody answers on is left over from a process that died; one that answers is in use.
    /// The folder is checked, so no one else can have put anything else there.
    private static func removeStaleSocket(at path: String, in folder: CInt, program: String, group: EventLoopGroup) async throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        if status.st_mode & S_IFMT == S_IFSOCK, let live = try? await ClientBootstrap(group: group).connect(unixDomainSocketPath: path).get() {
            try? await live.close()
            throw ControlError.socketInUse(path, program: program)
        }
        unlinkat(folder, (path as NSString).lastPathComponent, 0)
    }

    /// Unlinks first: a program waiting to take the path over may bind it as
    /// soon as nobody answers, and must not lose its new socket to this unlink.
    public func close() async {
        unlink(path)
        try? await channel.close()
    }

    /// Who may ask: root, and the user this process runs as now (after `--run-as`, the service user).
    static func mayAsk(_ user: uid_t?) -> Bool {
        guard let user else { return false }
        return user == 0 || user == getuid()
    }
}

/// Answers one request per connection, after checking who is asking.
private final class ControlRequestHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: ControlSocketServer.Answer
    private let afterAnswer: @Sendable (Data) -> Void
    private let logger: Logger
    private var allowed = false
    private var answered = false

    init(answer: @escaping ControlSocketServer.Answer, afterAnswer: @escaping @Sendable (Data) -> Void, logger: Logger) {
        self.answer = answer
        self.afterAnswer = afterAnswer
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        PeerCredentials.userID(of: context.channel).assumeIsolated().whenComplete { [self] result in
            let user = try? result.get()
            allowed = ControlSocketServer.mayAsk(user)
            if !allowed {
                logger.warning("control socket: refusing a connection from user \(user.map(String.init) ?? "unknown")")
                context.close(promise: nil)
            }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard allowed, !answered else { return }
        answered = true
        let request = Data(unwrapInboundIn(data).readableBytesView)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let (answer, afterAnswer) = (self.answer, self.afterAnswer)
        Task {
            let response = await answer(request)
            bound.eventLoop.execute {
                let context = bound.value
                context.writeAndFlush(NIOAny(ControlFraming.frame(response))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                    afterAnswer(request)
                }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.notice("control socket: \(error)")
        context.close(promise: nil)
    }
}
