import Foundation
import NIOCore
import NIOPosix

/// `tunnel-client status` and `stop`: one request to the running client's control socket.
public enum ControlClient {
    /// `isDefaultPath`: no --control was given, so a client started with sudo may be answering elsewhere.
    public static func request(_ type: String, path: String, isDefaultPath: Bool = false, group: EventLoopGroup) async throws -> ControlProtocol.Response {
        @Sendable func unreachable(_ reach: ControlSocketDiagnosis.Reach) -> ControlError {
            .unreachable(.examine(request: type, path: path, isDefaultPath: isDefaultPath, reach: reach))
        }
        let eventLoop = group.next()
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(ControlAnswerHandler(promise: promise))
                    }
                }
                .connect(unixDomainSocketPath: path)
                .get()
        } catch {
            let code = (error as? IOError)?.errnoCode ?? (error as? NIOConnectionError)?.connectionErrors.compactMap { ($0.error as? IOError)?.errnoCode }.first
            let failure = unreachable(code == EACCES || code == EPERM ? .notPermitted : .nothingThere)
            promise.fail(failure)
            throw failure
        }
        let payload = try JSONEncoder().encode(ControlProtocol.Request(type: type))
        channel.closeFuture.whenComplete { _ in promise.fail(unreachable(.closedWithoutAnswer)) }
        // A client that refuses this user closes at once; the write may fail then, and the answer tells why.
        try? await channel.writeAndFlush(ControlProtocol.frame(payload))
        let bytes = try await promise.futureResult.get()
        try? await channel.close()
        return try JSONDecoder().decode(ControlProtocol.Response.self, from: Data(bytes.readableBytesView))
    }
}

private final class ControlAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let promise: EventLoopPromise<ByteBuffer>

    init(promise: EventLoopPromise<ByteBuffer>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        promise.succeed(unwrapInboundIn(data))
    }
}
