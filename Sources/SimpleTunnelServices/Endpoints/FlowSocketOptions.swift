import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Options of a flow's TCP socket (accepted on a client's listener, or
/// connected by the server), set from the channel initializer: a bootstrap's
/// own options are applied through a chain of futures, which every flow paid.
enum FlowSocketOptions {
    /// TCP_USER_TIMEOUT: data unacknowledged this long gives the connection
    /// up (ETIMEDOUT), where the kernel's retransmissions would try for some
    /// 15 minutes. The same as the tunnel socket's. Since Linux 5.9 it
    /// also ends a connection whose zero window held our unsent data that
    /// long: a destination that stopped reading for good.
    static let userTimeoutMilliseconds = TunnelSocketOptions.userTimeoutMilliseconds

    /// TCP_USER_TIMEOUT as a channel option, for a listener (see
    /// `flowListenerOptions`) or a connecting socket.
    static let userTimeout = ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_USER_TIMEOUT))

    /// A socket the server connects: the flow's options and TCP_USER_TIMEOUT.
    static func apply(to channel: Channel) throws {
        try applyToAccepted(channel)
        try channel.syncOptions?.setOption(userTimeout, value: userTimeoutMilliseconds)
    }

    /// A socket accepted on a listener with `flowListenerOptions()`: it
    /// inherits TCP_NODELAY and TCP_USER_TIMEOUT from the listener (Linux
    /// copies a listener's TCP options to the sockets it accepts), so setting
    /// them again would cost every flow two setsockopt and a getsockname.
    static func applyToAccepted(_ channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        // A FIN from the application arrives as `inputClosed`; the other direction keeps working.
        try options.setOption(.allowRemoteHalfClosure, value: true)
        try options.setOption(.writeBufferWaterMark, value: StreamFlowEndpoint.writeBufferWaterMark)
        // A bulk flow reads up to 256 KiB at once (NIO's default stops at 64 KiB): a
        // quarter of the reads, and of the acknowledgements each read sends. Idle
        // flows hold no buffer, and small reads stay small (see MallocTuning).
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 256 * 1024))
        // TCP_NODELAY is left to the bootstrap, which sets it by default (a
        // ServerBootstrap on the listener, which its accepted sockets inherit).
    }
}

extension ServerBootstrap {
    /// A listener whose accepted sockets become flows: TCP_USER_TIMEOUT set on
    /// it once, for every socket it accepts to inherit (`FlowSocketOptions.applyToAccepted`).
    func flowListenerOptions() -> ServerBootstrap {
        serverChannelOption(FlowSocketOptions.userTimeout, value: FlowSocketOptions.userTimeoutMilliseconds)
    }
}
