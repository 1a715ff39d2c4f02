import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Watches the routing table while an IP tunnel is up (`ip monitor route`,
/// read through a NIO pipe) and reports every route added that wins over the
/// tunnel's (`TunnelRouteCover`): a router's DHCP option 121 route, a LAN
/// prefix covering a destination. With the kill switch up such a route
/// changes nothing, and the report says so; without it, traffic leaks there.
final class RouteWatch: Sendable {
    private let child: ChildProcess
    private let channel: EventLoopFuture<Channel>
    private let cover: NIOLockedValueBox<TunnelRouteCover>

    /// Starts watching; `report` runs on `eventLoop` for each overriding route, with the tunnel's network it beats.
    static func start(
        cover: TunnelRouteCover, on eventLoop: EventLoop, logger: Logger,
        report: @escaping @Sendable (MonitoredRoute, IPNetworkChoice) -> Void
    ) throws -> RouteWatch {
        guard let ip = SystemCommandRunner().locate("ip") else {
            throw NetworkConfigurationError.programNotFound("ip", searched: SystemCommandRunner().searchPath)
        }
        let child = try ChildProcess(ip, arguments: ["monitor", "route"], mergingErrors: true)
        let box = NIOLockedValueBox(cover)
        let channel = NIOPipeBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RouteMonitorHandler { line in
                        guard let route = MonitoredRoute(line: line) else { return }
                        if let beaten = box.withLockedValue({ $0.overridden(by: route) }) { report(route, beaten) }
                    })
                }
            }
            .takingOwnershipOfDescriptor(input: child.standardOutput)
        channel.whenFailure { error in
            logger.warning("the route watch did not start; routes that win over the tunnel go unreported", metadata: ["error": "\(error)"])
            child.kill()
        }
        return RouteWatch(child: child, channel: channel, cover: box)
    }

    private init(child: ChildProcess, channel: EventLoopFuture<Channel>, cover: NIOLockedValueBox<TunnelRouteCover>) {
        self.child = child
        self.channel = channel
        self.cover = cover
    }

    /// After a reconnection brought other routes.
    func update(_ cover: TunnelRouteCover) {
        self.cover.withLockedValue { $0 = cover }
    }

    func stop() {
        child.kill()
        channel.whenSuccess { $0.close(promise: nil) }
    }
}

/// Splits the monitor's output into lines; a line longer than any route's is dropped whole.
final class RouteMonitorHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var pending = ByteBuffer()
    private var discarding = false
    private let line: (String) -> Void
    private static let maximumLine = 4096

    init(line: @escaping (String) -> Void) {
        self.line = line
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        while let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - pending.readerIndex
            let text = pending.readString(length: length) ?? ""
            pending.moveReaderIndex(forwardBy: 1)
            if discarding {
                discarding = false
            } else {
                line(text)
            }
        }
        if pending.readableBytes > Self.maximumLine {
            pending.clear()
            discarding = true
        }
        pending.discardReadBytes()
    }
}
