import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

#if canImport(Glibc)
import Glibc
#endif

/// The tunnel socket keeps little below the multiplexer's schedule, at both ends,
/// on real loopback sockets.
@Suite("Tunnel socket options", .timeLimit(.minutes(2)))
struct TunnelSocketOptionsTests {
    @Test func bothEndsLimitUnsentBytesAndTheChannelBuffer() async throws {
        try await withTunnelSocketPair { client, accepted in
            for channel in [client, accepted] {
                let lowat = try await channel.getOption(
                    ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_NOTSENT_LOWAT))
                ).get()
                #expect(lowat == 16 * 1024)
                let marks = try await channel.getOption(.writeBufferWaterMark).get()
                #expect(marks.low == 32 * 1024)
                #expect(marks.high == 64 * 1024)
            }
        }
    }

    @Test func theChannelSaysFullOnlyPastItsHighWatermarkAndRecovers() async throws {
        try await withTunnelSocketPair { client, _ in
            let writable = WritabilityRecorder()
            let high = TunnelSocketOptions.writeBufferWaterMark.high
            let (atHigh, pastHigh, recovered) = try await client.eventLoop.submit {
                try client.pipeline.syncOperations.addHandler(writable)
                // Unflushed writes count toward the watermark, so the kernel takes none of these yet.
                client.write(ByteBuffer(repeating: 1, count: high), promise: nil)
                let atHigh = client.isWritable
                client.write(ByteBuffer(repeating: 1, count: 1), promise: nil)
                let pastHigh = client.isWritable
                let recovered = writable.nextWritable(on: client.eventLoop)
                client.flush()
                return (atHigh, pastHigh, recovered)
            }.get()
            #expect(atHigh)
            #expect(!pastHigh)
            // The peer reads (and drops) it all, so the buffer drains below the low watermark.
            try await recovered.get()
            #expect(client.isWritable)
        }
    }

    /// A connected loopback pair with `TunnelSocketOptions` applied on both ends, as
    /// the server (accepted) and the client (connected) do.
    private func withTunnelSocketPair(_ body: (Channel, Channel) async throws -> Void) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let acceptedPromise = group.next().makePromise(of: Channel.self)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try TunnelSocketOptions.apply(to: channel)
                    acceptedPromise.succeed(channel)
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = try #require(server.localAddress?.port)
        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try TunnelSocketOptions.apply(to: channel) }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let accepted = try await acceptedPromise.futureResult.get()
        do {
            try await body(client, accepted)
        } catch {
            try? await client.close()
            try? await server.close()
            throw error
        }
        try? await client.close()
        try? await server.close()
    }
}

/// Fulfils a promise the next time the channel becomes writable.
private final class WritabilityRecorder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private var waiting: EventLoopPromise<Void>?

    func nextWritable(on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        waiting = promise
        return promise.futureResult
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let promise = waiting {
            waiting = nil
            promise.succeed()
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        waiting?.fail(ChannelError.ioOnClosedChannel)
        waiting = nil
    }
}
