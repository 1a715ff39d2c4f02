import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// Real-socket peers on 127.0.0.1 for end-to-end tests.
enum LoopbackPeers {
    /// A TCP echo server: echoes everything, and after the client's FIN
    /// (half-close) sends its own FIN once all is echoed.
    static func echoServer(group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    /// A UDP echo server answering each datagram to its sender.
    static func udpEchoServer(group: EventLoopGroup) async throws -> Channel {
        try await DatagramBootstrap(group: group)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UDPEchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    /// Connects, sends `payload`, half-closes, and returns everything received
    /// until the peer's FIN, or what came before `timeout`, when the connection is closed.
    static func exchange(
        _ payload: ByteBuffer, port: Int, group: EventLoopGroup, host: String = "127.0.0.1", timeout: TimeAmount = .seconds(60)
    ) async throws -> ByteBuffer {
        let collector = CollectingHandler()
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: host, port: port)
            .get()
        let received = collector.promise(on: channel.eventLoop)
        // A peer that never sends its FIN ends the exchange here rather than the test's time limit.
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        try await channel.writeAndFlush(payload)
        try await channel.close(mode: .output)
        let result = try await received.get()
        try? await channel.close()
        return result
    }

    /// Connects, sends `payload` and returns as many bytes as it sent, without half-closing.
    static func firstBytes(_ payload: ByteBuffer, port: Int, group: EventLoopGroup) async throws -> ByteBuffer {
        let collector = CountingCollector(expected: payload.readableBytes)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let received = collector.promise(on: channel.eventLoop)
        try await channel.writeAndFlush(payload)
        let result = try await received.get()
        try? await channel.close()
        return result
    }

    /// Sends one datagram from a fresh socket and waits for one answer.
    static func udpRoundTrip(_ payload: ByteBuffer, port: Int, group: EventLoopGroup, timeout: TimeAmount = .seconds(10)) async throws -> ByteBuffer {
        let handler = FirstDatagramHandler()
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        defer { channel.close(promise: nil) }
        let answer = handler.promise(on: channel.eventLoop)
        let destination = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: payload))
        let timer = channel.eventLoop.scheduleTask(in: timeout) { answer.fail(ChannelError.connectTimeout(timeout)) }
        defer { timer.cancel() }
        return try await answer.futureResult.get()
    }

    /// `count` bytes of a pattern that differs per offset, to catch reordering.
    static func payload(_ count: Int, seed: UInt8 = 7) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            // Raw pointers keep this fast in debug builds, where tests run.
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
            for index in 0..<count {
                base[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8 &+ Int(seed))
            }
            return count
        }
        return buffer
    }
}

final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer())).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

final class UDPEchoHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: envelope.data)), promise: nil)
    }
}

/// Gathers a stream until the peer's FIN or close.
final class CollectingHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private var received = ByteBuffer()
    private var result: EventLoopPromise<ByteBuffer>?

    func promise(on eventLoop: EventLoop) -> EventLoopFuture<ByteBuffer> {
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        eventLoop.execute { self.result = promise }
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            result?.succeed(received)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        result?.succeed(received)
    }
}

final class FirstDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private var answer: EventLoopPromise<ByteBuffer>?

    func promise(on eventLoop: EventLoop) -> EventLoopPromise<ByteBuffer> {
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        eventLoop.execute { self.answer = promise }
        return promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        answer?.succeed(unwrapInboundIn(data).data)
    }
}

/// Gathers a stream until `expected` bytes have come (or the peer closes).
final class CountingCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let expected: Int
    private var received = ByteBuffer()
    private var result: EventLoopPromise<ByteBuffer>?

    init(expected: Int) {
        self.expected = expected
    }

    func promise(on eventLoop: EventLoop) -> EventLoopFuture<ByteBuffer> {
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        eventLoop.execute {
            self.result = promise
            if self.received.readableBytes >= self.expected { promise.succeed(self.received) }
        }
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        if received.readableBytes >= expected {
            result?.succeed(received)
            result = nil
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        result?.succeed(received)
        result = nil
    }
}
