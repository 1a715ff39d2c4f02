import NIOCore

/// A local socket the client listens on for the user (a forward, the SOCKS
/// proxy): where it is bound, and how to close it.
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

    public func close() async {
        try? await channel.close()
    }
}
