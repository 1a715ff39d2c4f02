// Bulk single-stream throughput over loopback, for Benchmarks/tls-throughput.sh.
//
//   TLSBenchmark ours  --cert C --key K --bytes N
//       our TLS client handler -> our TLS server handler, in-process source and sink.
//   TLSBenchmark relay --cert C --key K --bytes N
//       stunnel's topology built from our handlers: plain source -> our client relay
//       -> TLS -> our server relay -> plain sink, each relay on its own thread.
//   TLSBenchmark plain --connect-port P --sink-port S --bytes N
//       plain TCP source into P (a stunnel client), sink listening on S (behind a stunnel server).
//
// Prints "MBPS <megabytes per second>" (1 MB = 10^6 bytes) on the last line.
import Glibc
import NIOCore
import NIOPosix
import NIOTLS
import SimpleTunnelServices

struct Options {
    var mode = ""
    var certificate = ""
    var key = ""
    var bytes = 1 << 30
    var connectPort = 0
    var sinkPort = 0

    init(_ arguments: [String]) throws {
        var rest = arguments.dropFirst()
        guard let mode = rest.popFirst() else { throw UsageError() }
        self.mode = mode
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw UsageError() }
            switch flag {
            case "--cert": certificate = value
            case "--key": key = value
            case "--bytes": bytes = Int(value) ?? bytes
            case "--connect-port": connectPort = Int(value) ?? 0
            case "--sink-port": sinkPort = Int(value) ?? 0
            default: throw UsageError()
            }
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    var description: String {
        "usage: TLSBenchmark ours|relay --cert C --key K [--bytes N] | plain --connect-port P --sink-port S [--bytes N]"
    }
}

/// Counts bytes; completes when `expected` have arrived.
final class Sink: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: touched only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    private var received = 0
    private let expected: Int
    let done: EventLoopPromise<Void>

    init(expected: Int, done: EventLoopPromise<Void>) {
        self.expected = expected
        self.done = done
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        if received >= expected { done.succeed() }
    }
}

/// Writes `total` bytes as fast as writability allows, starting on
/// handshake completion (TLS) or channel activation (plain).
final class Source: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: touched only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let chunk: ByteBuffer
    private var remaining: Int
    private let waitsForTLS: Bool
    let started: EventLoopPromise<ContinuousClock.Instant>

    init(total: Int, waitsForTLS: Bool, started: EventLoopPromise<ContinuousClock.Instant>) {
        self.chunk = ByteBuffer(repeating: 0x5a, count: 256 * 1024)
        self.remaining = total
        self.waitsForTLS = waitsForTLS
        self.started = started
    }

    func channelActive(context: ChannelHandlerContext) {
        if !waitsForTLS { start(context: context) }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { start(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        pump(context: context)
    }

    private func start(context: ChannelHandlerContext) {
        started.succeed(.now)
        pump(context: context)
    }

    private func pump(context: ChannelHandlerContext) {
        while remaining > 0 && context.channel.isWritable {
            var slice = chunk
            if remaining < slice.readableBytes { slice = slice.getSlice(at: 0, length: remaining) ?? slice }
            remaining -= slice.readableBytes
            context.write(NIOAny(slice), promise: nil)
        }
        context.flush()
    }
}

/// Large reads: fewer syscalls and fewer, bigger TLS batches.
let bigReads = AdaptiveRecvByteBufferAllocator(minimum: 64 * 1024, initial: 256 * 1024, maximum: 1024 * 1024)

let watermarks = ChannelOptions.Types.WriteBufferWaterMark(low: 1 << 20, high: 4 << 20)

func runOurs(_ options: Options) async throws -> Double {
    let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let serverContext = try TLSContext(
        configuration: .server(certificateChain: .file(options.certificate), privateKey: .file(options.key)))
    let clientContext = try TLSContext(configuration: .client(trust: .insecureNoVerification))
    let done = serverGroup.next().makePromise(of: Void.self)
    let started = clientGroup.next().makePromise(of: ContinuousClock.Instant.self)
    let total = options.bytes

    let server = try await ServerBootstrap(group: serverGroup)
        .childChannelOption(.recvAllocator, value: bigReads)
        .childChannelOption(.writeBufferWaterMark, value: watermarks)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(TLSHandler(context: serverContext))
                try channel.pipeline.syncOperations.addHandler(Sink(expected: total, done: done))
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    let port = server.localAddress?.port ?? 0
    let client = try await ClientBootstrap(group: clientGroup)
        .channelOption(.recvAllocator, value: bigReads)
        .channelOption(.writeBufferWaterMark, value: watermarks)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(TLSHandler(context: clientContext))
                try channel.pipeline.syncOperations.addHandler(Source(total: total, waitsForTLS: true, started: started))
            }
        }
        .connect(host: "127.0.0.1", port: port).get()
    let start = try await started.futureResult.get()
    try await done.futureResult.get()
    let elapsed = ContinuousClock.now - start
    try await client.close()
    try await server.close()
    try await serverGroup.shutdownGracefully()
    try await clientGroup.shutdownGracefully()
    return megabytesPerSecond(total, elapsed)
}

func runPlain(_ options: Options) async throws -> Double {
    let sinkGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let sourceGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let done = sinkGroup.next().makePromise(of: Void.self)
    let started = sourceGroup.next().makePromise(of: ContinuousClock.Instant.self)
    let total = options.bytes
    let sink = try await ServerBootstrap(group: sinkGroup)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.recvAllocator, value: bigReads)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(Sink(expected: total, done: done))
            }
        }
        .bind(host: "127.0.0.1", port: options.sinkPort).get()
    let source = try await ClientBootstrap(group: sourceGroup)
        .channelOption(.writeBufferWaterMark, value: watermarks)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(Source(total: total, waitsForTLS: false, started: started))
            }
        }
        .connect(host: "127.0.0.1", port: options.connectPort).get()
    let start = try await started.futureResult.get()
    try await done.futureResult.get()
    let elapsed = ContinuousClock.now - start
    try await source.close()
    try await sink.close()
    try await sinkGroup.shutdownGracefully()
    try await sourceGroup.shutdownGracefully()
    return megabytesPerSecond(total, elapsed)
}

/// Forwards bytes between two channels on one event loop, reading from one
/// only while the other is writable.
final class Glue: ChannelDuplexHandler, @unchecked Sendable {
    // @unchecked: both ends live on the same event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var partner: Glue?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (Glue, Glue) {
        let first = Glue()
        let second = Glue()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil; partner = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let partner, partner.pendingRead {
            partner.pendingRead = false
            partner.context?.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? true {
            context.read()
        } else {
            pendingRead = true
        }
    }
}

/// Accepts on 127.0.0.1 (port 0), connects each connection onwards to
/// `targetPort` from the same event loop, and glues the two together.
func relay(
    group: EventLoopGroup, targetPort: Int, acceptTLS: TLSContext?, connectTLS: TLSContext?
) async throws -> Channel {
    try await ServerBootstrap(group: group)
        .childChannelOption(.recvAllocator, value: bigReads)
        .childChannelOption(.writeBufferWaterMark, value: watermarks)
        .childChannelOption(.autoRead, value: true)
        .childChannelInitializer { inbound in
            let (inboundGlue, outboundGlue) = Glue.pair()
            let outbound = ClientBootstrap(group: inbound.eventLoop)
                .channelOption(.recvAllocator, value: bigReads)
                .channelOption(.writeBufferWaterMark, value: watermarks)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let connectTLS {
                            try channel.pipeline.syncOperations.addHandler(TLSHandler(context: connectTLS))
                        }
                        try channel.pipeline.syncOperations.addHandler(outboundGlue)
                    }
                }
                .connect(host: "127.0.0.1", port: targetPort)
            return outbound.flatMapThrowing { _ in
                if let acceptTLS {
                    try inbound.pipeline.syncOperations.addHandler(TLSHandler(context: acceptTLS))
                }
                try inbound.pipeline.syncOperations.addHandler(inboundGlue)
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
}

func runRelay(_ options: Options) async throws -> Double {
    let sinkGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let sourceGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let serverRelayGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clientRelayGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let serverContext = try TLSContext(
        configuration: .server(certificateChain: .file(options.certificate), privateKey: .file(options.key)))
    let clientContext = try TLSContext(configuration: .client(trust: .insecureNoVerification))
    let done = sinkGroup.next().makePromise(of: Void.self)
    let started = sourceGroup.next().makePromise(of: ContinuousClock.Instant.self)
    let total = options.bytes

    let sink = try await ServerBootstrap(group: sinkGroup)
        .childChannelOption(.recvAllocator, value: bigReads)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(Sink(expected: total, done: done))
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    let serverRelay = try await relay(
        group: serverRelayGroup, targetPort: sink.localAddress?.port ?? 0, acceptTLS: serverContext, connectTLS: nil)
    let clientRelay = try await relay(
        group: clientRelayGroup, targetPort: serverRelay.localAddress?.port ?? 0, acceptTLS: nil,
        connectTLS: clientContext)
    let source = try await ClientBootstrap(group: sourceGroup)
        .channelOption(.writeBufferWaterMark, value: watermarks)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(Source(total: total, waitsForTLS: false, started: started))
            }
        }
        .connect(host: "127.0.0.1", port: clientRelay.localAddress?.port ?? 0).get()
    let start = try await started.futureResult.get()
    try await done.futureResult.get()
    let elapsed = ContinuousClock.now - start
    try await source.close()
    for channel in [clientRelay, serverRelay, sink] { try await channel.close() }
    for group in [sinkGroup, sourceGroup, serverRelayGroup, clientRelayGroup] { try await group.shutdownGracefully() }
    return megabytesPerSecond(total, elapsed)
}

func megabytesPerSecond(_ bytes: Int, _ elapsed: Duration) -> Double {
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(bytes) / seconds / 1e6
}

do {
    let options = try Options(CommandLine.arguments)
    let rate: Double
    switch options.mode {
    case "ours": rate = try await runOurs(options)
    case "relay": rate = try await runRelay(options)
    case "plain": rate = try await runPlain(options)
    default: throw UsageError()
    }
    print("MBPS \(rate)")
} catch {
    print("TLSBenchmark: \(error)")
    exit(1)
}
