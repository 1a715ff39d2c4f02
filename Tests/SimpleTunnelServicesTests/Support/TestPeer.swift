import NIOCore
import NIOPosix
import NIOTLS
import Synchronization
@testable import SimpleTunnelServices

/// What a test peer should do once connected.
struct PeerPlan: Sendable {
    /// Written and flushed on channelActive, i.e. before the handshake completes.
    var earlyBytes: [UInt8] = []
    /// Written when the handshake completes.
    var greeting: [UInt8] = []
    /// Chunks of `pattern` to send (backpressure-aware) after the handshake.
    var bulkChunks = 0
    var pattern: BulkPattern?
    /// Closes (with close_notify) right after the last write is flushed.
    var closeAfterSending = false
    /// How many times to call close then (a repeated close must not cut data off).
    var closeCalls = 1
    var echo = false
}

/// What a test peer saw, readable from the test's thread.
final class PeerRecord: Sendable {
    struct Snapshot: CustomStringConvertible {
        var handshakeCompleted = false
        var sessionInfo: TLSSessionInfo?
        var errors: [TLSError] = []
        var otherErrors: [String] = []
        var receivedCount = 0
        /// The first 64 KiB received, for small exchanges.
        var receivedPrefix: [UInt8] = []
        /// SHA-256 of everything received, set when the channel closes.
        var receivedDigest: [UInt8]?
        var shutdownCompleted = false
        var closed = false
        var sslReleasedOnClose: Bool?
        var failedWrites: [TLSError] = []

        /// Short enough for a failed expectation's message.
        var description: String {
            "handshake=\(handshakeCompleted) received=\(receivedCount) closed=\(closed)"
                + " shutdownCompleted=\(shutdownCompleted) errors=\(errors) other=\(otherErrors)"
                + " failedWrites=\(failedWrites) released=\(String(describing: sslReleasedOnClose))"
        }
    }

    private let state = Mutex(Snapshot())

    var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    func hasError(_ matches: (TLSError) -> Bool) -> Bool {
        snapshot.errors.contains(where: matches)
    }
}

/// Plaintext end of a test connection: records everything, follows its plan.
final class TestPeerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let record: PeerRecord
    private let plan: PeerPlan
    private let hasher = SHA256Hasher()
    private var chunksSent = 0
    private var sending = false

    init(record: PeerRecord, plan: PeerPlan) {
        self.record = record
        self.plan = plan
    }

    func channelActive(context: ChannelHandlerContext) {
        if !plan.earlyBytes.isEmpty {
            let record = self.record
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: plan.earlyBytes))).whenFailure { error in
                if let error = error as? TLSError { record.update { $0.failedWrites.append(error) } }
            }
        }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event as? TLSUserEvent {
        case .handshakeCompleted:
            let info = try? context.pipeline.syncOperations.handler(type: TLSHandler.self).sessionInfo
            record.update {
                $0.handshakeCompleted = true
                $0.sessionInfo = info
            }
            if !plan.greeting.isEmpty {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: plan.greeting)), promise: nil)
            }
            sending = true
            sendMore(context: context)
        case .shutdownCompleted:
            record.update { $0.shutdownCompleted = true }
        case nil:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { hasher.update($0) }
        record.update {
            $0.receivedCount += buffer.readableBytes
            let room = 65_536 - $0.receivedPrefix.count
            if room > 0 { $0.receivedPrefix += buffer.readableBytesView.prefix(room) }
        }
        if plan.echo {
            context.write(wrapOutboundOut(buffer), promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if plan.echo { context.flush() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        sendMore(context: context)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        record.update {
            if let error = error as? TLSError { $0.errors.append(error) } else { $0.otherErrors.append("\(error)") }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let released = try? context.pipeline.syncOperations.handler(type: TLSHandler.self).hasReleasedSSL
        let digest = hasher.finish()
        record.update {
            $0.closed = true
            $0.receivedDigest = digest
            $0.sslReleasedOnClose = released
        }
        context.fireChannelInactive()
    }

    private func sendMore(context: ChannelHandlerContext) {
        guard sending else { return }
        if let pattern = plan.pattern {
            while chunksSent < plan.bulkChunks && context.channel.isWritable {
                let chunk = ByteBuffer(bytes: pattern.chunk(chunksSent))
                chunksSent += 1
                context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
            }
        }
        // Writes can re-enter here (writability changes); close only once.
        if sending && chunksSent >= plan.bulkChunks && plan.closeAfterSending {
            sending = false
            for _ in 0..<plan.closeCalls { context.close(promise: nil) }
        }
    }
}

/// Loopback servers and clients with our TLS handler in front of a test peer.
enum Loopback {
    static var group: MultiThreadedEventLoopGroup { .singleton }

    static func server(tls: TLSContext, record: PeerRecord, plan: PeerPlan = PeerPlan()) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(TLSHandler(context: tls))
                    try sync.addHandler(TestPeerHandler(record: record, plan: plan))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    static func client(
        port: Int, tls: TLSContext, serverName: String? = nil, record: PeerRecord, plan: PeerPlan = PeerPlan()
    ) async throws -> Channel {
        try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(TLSHandler(context: tls, serverName: serverName))
                    try sync.addHandler(TestPeerHandler(record: record, plan: plan))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// Polls `condition` until it holds or `seconds` pass.
    static func waitUntil(seconds: Double = 20, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

extension Channel {
    /// The bound or connected port; -1 if the channel has no address (never on a live socket).
    var port: Int { localAddress?.port ?? -1 }
}
