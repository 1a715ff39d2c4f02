import Foundation
import NIOCore
import NIOPosix

/// `tunnel-client status` and `stop`: one request to the running client's control socket.
public enum ControlClient {
    public static func request(_ type: String, path: String, group: EventLoopGroup) async throws -> ControlProtocol.Response {
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
            promise.fail(ControlError.noAnswer(path))
            throw ControlError.noAnswer(path)
        }
        let payload = try JSONEncoder().encode(ControlProtocol.Request(type: type))
        try await channel.writeAndFlush(ControlProtocol.frame(payload))
        channel.closeFuture.whenComplete { _ in promise.fail(ControlError.noAnswer(path)) }
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
