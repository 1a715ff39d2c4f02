import NIOCore
import NIOPosix

/// A local socket listening for the user (a forward, the SOCKS proxy, the
/// metrics endpoint): where it is bound, and how to close it.
public final class LocalListener: Sendable {
    /// Connections waiting to be accepted; bursts of hundreds must not be reset.
    static let backlog: Int32 = 1024

    public let localAddress: SocketAddress
    private let channel: Channel

    init(channel: Channel) throws {
        self.channel = channel
        guard let address = channel.localAddress else { throw ChannelError.unknownLocalAddress }
        self.localAddress = address
    }

    /// A TCP listener whose accepted connections become flows: on the
    /// tunnel's event loop and unbuffered; the child initializer applies
    /// `FlowSocketOptions` (half-closable, flow watermarks).
    static func streamBootstrap(on eventLoop: EventLoop) -> ServerBootstrap {
        ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: backlog)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
    }

    public func close() async {
        try? await channel.close()
    }
}
