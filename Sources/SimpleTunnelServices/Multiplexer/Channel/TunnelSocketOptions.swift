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
    /// TCP_USER_TIMEOUT: data unacknowledged this long gives the connection
    /// up, the same time keepalive takes to declare a silent peer gone (60 s
    /// idle, then 5 probes 10 s apart). Keepalive alone does not cover a peer
    /// that vanished while we had data in flight (probes wait for an idle
    /// socket; retransmissions would go on for some 15 minutes).
    static let userTimeoutMilliseconds = (keepaliveIdleSeconds + keepaliveIntervalSeconds * keepaliveProbes) * 1000

    /// What the multiplexer's schedule cannot reorder any more is kept small, so
    /// a keystroke waits behind little bulk data: bytes the kernel holds unsent
    /// (TCP_NOTSENT_LOWAT; the socket reports writable, and accepts more, only
    /// below it) and bytes in the channel's outbound buffer (its watermarks).
    /// These are the sizes a tunnel starts with, those of a fast link; the
    /// tunnel's handler then lowers them to its link's rate (`LinkPace`).
    static let unsentLowWatermark = LinkPace.Sizes.fastest.unsentLowWatermark
    static let writeBufferWaterMark = LinkPace.Sizes.fastest.channelWaterMark

    /// A server's accepted tunnel: these options, and TCP_USER_TIMEOUT. Liveness
    /// of a tunnel that carries flows rests on the kernel alone: the server
    /// never closes such a tunnel for being quiet (PROTOCOL.md A4).
    static func applyToServerTunnel(_ channel: Channel) throws {
        try apply(to: channel)
        try channel.syncOptions?.setOption(
            ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_USER_TIMEOUT)), value: userTimeoutMilliseconds)
    }

    static func apply(to channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(.tcpOption(.tcp_nodelay), value: 1)
        try options.setOption(.writeBufferWaterMark, value: writeBufferWaterMark)
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16 * 1024, maximum: 256 * 1024))
        try options.setOption(.socketOption(.so_keepalive), value: 1)
        let tcpOptions = [
            (TCP_KEEPIDLE, keepaliveIdleSeconds), (TCP_KEEPINTVL, keepaliveIntervalSeconds), (TCP_KEEPCNT, keepaliveProbes),
            (TCP_NOTSENT_LOWAT, unsentLowWatermark),
        ]
        for (name, value) in tcpOptions {
            try options.setOption(
                ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name)), value: value)
        }
    }
}
