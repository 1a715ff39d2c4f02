import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Options of a tunnel's TCP socket, the same at both ends.
enum TunnelSocketOptions {
    /// TCP keepalive tuned so that a peer that vanished without a word (power
    /// loss, a dropped NAT mapping) is noticed in about two minutes rather
    /// than the kernel's default two hours.
    static let keepaliveIdleSeconds = 60
    static let keepaliveIntervalSeconds = 10
    static let keepaliveProbes = 5

    static func apply(to channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(.tcpOption(.tcp_nodelay), value: 1)
        // Room for a burst of large frames before the tunnel counts as full.
        try options.setOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16 * 1024, maximum: 256 * 1024))
        try options.setOption(.socketOption(.so_keepalive), value: 1)
        for (name, value) in [(TCP_KEEPIDLE, keepaliveIdleSeconds), (TCP_KEEPINTVL, keepaliveIntervalSeconds), (TCP_KEEPCNT, keepaliveProbes)] {
            try options.setOption(
                ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name)), value: value)
        }
    }
}
