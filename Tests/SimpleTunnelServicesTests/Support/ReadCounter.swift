import NIOCore

/// Counts the reads that reach the socket: put first in a pipeline to see
/// whether the handlers above hold reads back.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    private(set) var count = 0

    func read(context: ChannelHandlerContext) {
        count += 1
        context.read()
    }
}
