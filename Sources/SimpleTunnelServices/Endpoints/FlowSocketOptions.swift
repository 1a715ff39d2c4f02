import NIOCore

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

    static func apply(to channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        // A FIN from the application arrives as `inputClosed`; the other direction keeps working.
        try options.setOption(.allowRemoteHalfClosure, value: true)
        try options.setOption(.writeBufferWaterMark, value: StreamFlowEndpoint.writeBufferWaterMark)
        // A bulk flow reads up to 256 KiB at once (NIO's default stops at 64 KiB): a
        // quarter of the reads, and of the acknowledgements each read sends. Idle
        // flows hold no buffer, and small reads stay small (see MallocTuning).
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 256 * 1024))
        try options.setOption(
            ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_USER_TIMEOUT)), value: userTimeoutMilliseconds)
        // TCP_NODELAY is left to the bootstrap, which sets it by default.
    }
}
