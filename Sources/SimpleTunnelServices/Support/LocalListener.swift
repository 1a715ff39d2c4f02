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

    /// A TCP listener whose accepted connections become flows, on the
    /// tunnel's event loop; the caller adds the flows' socket options.
    /// TCP_NODELAY is the one ServerBootstrap sets on the listener by default,
    /// which accepted sockets inherit: a child option would cost every flow a
    /// setsockopt, a getsockname and a chain of futures.
    static func streamBootstrap(on eventLoop: EventLoop) -> ServerBootstrap {
        ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: backlog)
    }

    public func close() async {
        try? await channel.close()
    }
}
