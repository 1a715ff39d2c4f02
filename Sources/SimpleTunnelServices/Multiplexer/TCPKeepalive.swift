import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// TCP keepalive on a tunnel socket, tuned so that a peer that vanished
/// without a word (power loss, a dropped NAT mapping) is noticed in about
/// two minutes rather than the kernel's default two hours.
enum TCPKeepalive {
    static let idleSeconds = 60
    static let intervalSeconds = 10
    static let probes = 5

    static func apply(to channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(.socketOption(.so_keepalive), value: 1)
        for (name, value) in [(TCP_KEEPIDLE, idleSeconds), (TCP_KEEPINTVL, intervalSeconds), (TCP_KEEPCNT, probes)] {
            try options.setOption(
                ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name)), value: value)
        }
    }
}
