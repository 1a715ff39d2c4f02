// The smallest SwiftNIO TCP forwarder, for Benchmarks/app-layer.sh: one process,
// one event loop, no TLS and no tunnel; each accepted connection gets its own
// connection to the target and bytes are copied both ways (with backpressure and
// half-close). Whatever it measures is the most any forwarder built on SwiftNIO can
// reach on this machine, so it shows how far a target is within reach.
//
//   RelayFloor LISTEN_PORT:TARGET_PORT [LISTEN_PORT:TARGET_PORT ...]   (127.0.0.1 both sides)
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// One side of a relayed pair: reads only while the other side can take the bytes.
final class RelayHalf: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    var partner: RelayHalf?
    private var context: ChannelHandlerContext?
    private var readPending = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil; partner = nil }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            partner?.context?.close(mode: .output, promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.resumeReading() }
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? true {
            context.read()
        } else {
            readPending = true
        }
    }

    func resumeReading() {
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }
}

func usage() -> Never {
    print("usage: RelayFloor LISTEN_PORT:TARGET_PORT [LISTEN_PORT:TARGET_PORT ...]")
    exit(2)
}

let pairs: [(listen: Int, target: Int)] = CommandLine.arguments.dropFirst().map { argument in
    let parts = argument.split(separator: ":")
    guard parts.count == 2, let listen = Int(parts[0]), let target = Int(parts[1]), (0...65535).contains(listen), (1...65535).contains(target) else {
        usage()
    }
    return (listen, target)
}
if pairs.isEmpty { usage() }

let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
var listeners: [Channel] = []
for pair in pairs {
    let target = try SocketAddress(ipAddress: "127.0.0.1", port: pair.target)
    let listener = try ServerBootstrap(group: loop)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .serverChannelOption(.backlog, value: 256)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .childChannelOption(.allowRemoteHalfClosure, value: true)
        .childChannelInitializer { inbound in
            inbound.eventLoop.makeCompletedFuture {
                let local = RelayHalf()
                let remote = RelayHalf()
                local.partner = remote
                remote.partner = local
                // Nothing is read from the client until the target has answered.
                try inbound.syncOptions?.setOption(.autoRead, value: false)
                try inbound.pipeline.syncOperations.addHandler(local)
                let boundRemote = NIOLoopBound(remote, eventLoop: inbound.eventLoop)
                ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.allowRemoteHalfClosure, value: true)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(boundRemote.value) }
                    }
                    .connect(to: target)
                    .whenComplete { result in
                        switch result {
                        case .success:
                            try? inbound.syncOptions?.setOption(.autoRead, value: true)
                        case .failure:
                            inbound.close(promise: nil)
                        }
                    }
            }
        }
        .bind(host: "127.0.0.1", port: pair.listen)
        .wait()
    print("relaying 127.0.0.1:\(listener.localAddress?.port ?? pair.listen) to 127.0.0.1:\(pair.target)")
    fflush(nil)  // every stream: the script waits for this line
    listeners.append(listener)
}
for listener in listeners {
    try listener.closeFuture.wait()
}
