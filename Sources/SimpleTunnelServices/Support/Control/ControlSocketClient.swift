import Foundation
import NIOCore
import NIOPosix

/// One request to a running program's control socket, and its answer.
public enum ControlSocketClient {
    /// How long a running program has to answer: a status or a kick is
    /// answered at once, so a silent one is stopped (SIGSTOP) or wedged, and
    /// the command says so instead of hanging.
    public static let defaultAnswerDeadline = TimeAmount.seconds(10)

    /// - Parameter program: who should answer, for the error when nothing does.
    public static func exchange(
        _ request: Data, path: String, program: String, group: EventLoopGroup,
        answerDeadline: TimeAmount = defaultAnswerDeadline
    ) async throws -> Data {
        let eventLoop = group.next()
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(answerDeadline)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlFrameDecoder(limit: ControlFraming.maximumAnswerLength)))
                        try channel.pipeline.syncOperations.addHandler(ControlAnswerHandler(promise: promise))
                    }
                }
                .connect(unixDomainSocketPath: path)
                .get()
        } catch {
            let code = (error as? IOError)?.errnoCode
                ?? (error as? NIOConnectionError)?.connectionErrors.compactMap { ($0.error as? IOError)?.errnoCode }.first
            let failure = ControlError.noAnswer(path, program: program, reach: code == EACCES || code == EPERM ? .notPermitted : .nothingThere)
            promise.fail(failure)
            throw failure
        }
        channel.closeFuture.whenComplete { _ in promise.fail(ControlError.noAnswer(path, program: program, reach: .closedWithoutAnswer)) }
        let deadline = eventLoop.scheduleTask(in: answerDeadline) {
            promise.fail(ControlError.noAnswerInTime(path, program: program, seconds: Double(answerDeadline.nanoseconds) / 1e9))
            channel.close(promise: nil)
        }
        promise.futureResult.whenComplete { _ in deadline.cancel() }
        // A program that refuses this user closes at once; the write may fail then, and the answer tells why.
        try? await channel.writeAndFlush(ControlFraming.frame(request))
        let bytes = try await promise.futureResult.get()
        try? await channel.close()
        return Data(bytes.readableBytesView)
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
