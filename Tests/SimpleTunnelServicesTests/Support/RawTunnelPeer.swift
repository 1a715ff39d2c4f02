import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// A test client speaking the wire protocol by hand over plaintext, to send
/// exactly what a test wants (good or bad) and see exactly what comes back.
final class RawTunnelPeer: Sendable {
    let channel: Channel
    private let inbox: Inbox

    private init(channel: Channel, inbox: Inbox) {
        self.channel = channel
        self.inbox = inbox
    }

    /// - Parameters:
    ///   - first: sent from the event loop as soon as the connection is up,
    ///     so that a busy test thread cannot delay it past the server's first-message timeout.
    ///   - source: the local address to connect from (any of 127.0.0.0/8), to look like another client.
    static func connect(port: Int, group: EventLoopGroup, sending first: TunnelMessage? = nil, from source: String? = nil) async throws -> RawTunnelPeer {
        let inbox = Inbox()
        var bootstrap = ClientBootstrap(group: group)
        if let source {
            bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0))
        }
        let channel = try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addTunnelMessageCodec()
                    try channel.pipeline.syncOperations.addHandler(InboxHandler(inbox: inbox, first: first))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        return RawTunnelPeer(channel: channel, inbox: inbox)
    }

    func send(_ messages: TunnelMessage...) async throws {
        try await send(messages)
    }

    /// All of `messages` in one flush.
    func send(_ messages: [TunnelMessage]) async throws {
        for message in messages {
            channel.write(message, promise: nil)
        }
        channel.flush()
    }

    /// Sends `payload` as `data` messages of at most 32 KiB (a frame holds 128 KiB).
    func sendData(_ payload: ByteBuffer, for identifier: TunnelConnectionIdentifier) async throws {
        var remaining = payload
        while remaining.readableBytes > 0 {
            let chunk = remaining.readSlice(length: min(32 * 1024, remaining.readableBytes)) ?? ByteBuffer()
            channel.write(TunnelMessage.data(identifier: identifier, payload: chunk), promise: nil)
        }
        channel.flush()
    }

    /// Sends a frame whose payload is `propertyList`, whatever it holds.
    func send(propertyList: PropertyListValue) async throws {
        var frame = ByteBuffer()
        let payload = BinaryPropertyListWriter.bytes(propertyList)
        frame.writeInteger(UInt32(payload.readableBytes + 4), endianness: .little)
        frame.writeImmutableBuffer(payload)
        try await sendRaw(frame)
    }

    /// Sends bytes past the codec.
    func sendRaw(_ bytes: ByteBuffer) async throws {
        let context = try await channel.pipeline.context(handlerType: TunnelFrameEncoder.self).get()
        try await channel.eventLoop.submit {
            context.writeAndFlush(NIOAny(bytes), promise: nil)
        }.get()
    }

    /// The next message from the server, skipping those `skip` accepts; nil
    /// if none comes within `timeout` or the tunnel closed. What arrived is
    /// looked at before the deadline is: a test held off the CPU past the
    /// deadline (a busy parallel run) still gets the message that came meanwhile.
    func next(timeout: TimeAmount = .seconds(10), skip: (TunnelMessage) -> Bool = { _ in false }) async -> TunnelMessage? {
        let deadline = NIODeadline.now() + timeout
        while true {
            while let message = inbox.pop() {
                if case .message(let decoded) = message, !skip(decoded) { return decoded }
            }
            if inbox.isClosed || NIODeadline.now() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits for the server to close the tunnel (looked at once more past the deadline, as `next`).
    func waitForClose(timeout: TimeAmount = .seconds(10)) async -> Bool {
        let deadline = NIODeadline.now() + timeout
        while !inbox.isClosed {
            if NIODeadline.now() >= deadline { return inbox.isClosed }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Data received for `identifier` until `close(write)` or `close(all)` for it.
    func collectData(for identifier: TunnelConnectionIdentifier, timeout: TimeAmount = .seconds(20)) async -> (data: ByteBuffer, closedWith: TunnelConnectionCloseDirection?) {
        var collected = ByteBuffer()
        while let message = await next(timeout: timeout) {
            switch message {
            case .data(identifier, var payload, _):
                collected.writeBuffer(&payload)
            case .close(identifier, let direction) where direction == .write || direction == .all:
                return (collected, direction)
            default:
                continue
            }
        }
        return (collected, nil)
    }

    func close() async {
        try? await channel.close()
    }

    final class Inbox: Sendable {
        private let state = NIOLockedValueBox<(messages: [TunnelInboundMessage], closed: Bool)>(([], false))

        func push(_ message: TunnelInboundMessage) { state.withLockedValue { $0.messages.append(message) } }
        func markClosed() { state.withLockedValue { $0.closed = true } }
        var isClosed: Bool { state.withLockedValue { $0.closed && $0.messages.isEmpty } }

        func pop() -> TunnelInboundMessage? {
            state.withLockedValue { state in
                state.messages.isEmpty ? nil : state.messages.removeFirst()
            }
        }
    }

    private final class InboxHandler: ChannelInboundHandler {
        typealias InboundIn = TunnelInboundMessage
        typealias OutboundOut = TunnelMessage
        let inbox: Inbox
        let first: TunnelMessage?

        init(inbox: Inbox, first: TunnelMessage?) {
            self.inbox = inbox
            self.first = first
        }

        func channelActive(context: ChannelHandlerContext) {
            if let first {
                context.writeAndFlush(wrapOutboundOut(first), promise: nil)
            }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            inbox.push(unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            inbox.markClosed()
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            context.close(promise: nil)
        }
    }
}

/// Answers names from a table; everything else does not resolve. Lets tests
/// exercise name failures without asking any real resolver.
struct StaticNameResolver: NameResolver {
    var table: [String: String] = ["localhost": "127.0.0.1"]

    func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            return eventLoop.makeSucceededFuture([literal])
        }
        guard let address = table[host.lowercased()], let resolved = try? SocketAddress(ipAddress: address, port: port) else {
            return eventLoop.makeFailedFuture(HostResolver.Failure.noSuchHost(host: host, reason: "not in the test's table"))
        }
        return eventLoop.makeSucceededFuture([resolved])
    }
}
