import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Destinations with particular manners, for the server's side of flows.
enum DestinationServers {
    /// A port on 127.0.0.1 where nothing listens: a socket bound to it and never
    /// listening, kept until the test program ends, so connecting is refused (RST)
    /// and no other test's server can take the port meanwhile (bound, then closed,
    /// it was free for the next bind of port 0 to reuse).
    static func closedPort(group: EventLoopGroup) async throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(descriptor)
            throw IOError(errnoCode: code, reason: "bind")
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts and never reads, so the connection's buffers fill up.
    static func nonReading(group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.socketOption(.so_rcvbuf), value: 16 * 1024)
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    /// Sends `greeting` and its FIN at once, then counts what it receives until the client's FIN.
    static func speaker(greeting: ByteBuffer, received: NIOLockedValueBox<Int?>, group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SpeakerHandler(greeting: greeting, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    /// Streams `count` bytes of zeros to whoever connects, then closes.
    static func source(count: Int, group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SourceHandler(remaining: count))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }
}

/// A listening socket whose accept queue is full, so new connections hang
/// (Linux drops their SYNs): a loopback destination that times out.
final class SaturatedListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the queue: with a backlog of 0, Linux queues one connection; two to be sure.
        for _ in 0..<2 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let flags = fcntl(client, F_GETFL)
            _ = fcntl(client, F_SETFL, flags | O_NONBLOCK)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(client, $0, length) } }
            descriptors.append(client)
        }
        usleep(100_000)
    }

    deinit {
        for descriptor in descriptors {
            Glibc.close(descriptor)
        }
    }
}

private final class SpeakerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let greeting: ByteBuffer
    let received: NIOLockedValueBox<Int?>
    var count = 0

    init(greeting: ByteBuffer, received: NIOLockedValueBox<Int?>) {
        self.greeting = greeting
        self.received = received
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(greeting), promise: nil)
        context.close(mode: .output, promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        count += unwrapInboundIn(data).readableBytes
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            received.withLockedValue { $0 = count }
            context.close(promise: nil)
        }
    }

    /// With our output already shut, NIO turns the peer's FIN into a full close.
    func channelInactive(context: ChannelHandlerContext) {
        received.withLockedValue { $0 = $0 ?? count }
    }
}

private final class SourceHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    var remaining: Int

    init(remaining: Int) { self.remaining = remaining }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { send(context: context) }
    }

    private func send(context: ChannelHandlerContext) {
        while remaining > 0, context.channel.isWritable {
            let chunk = min(remaining, 64 * 1024)
            remaining -= chunk
            context.write(wrapOutboundOut(ByteBuffer(repeating: 0, count: chunk)), promise: nil)
        }
        context.flush()
        if remaining == 0 {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer())).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            remaining = -1
        }
    }
}
