import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP relay on loopback to a Unix socket (PostgreSQL's) that can reset
/// every connection it carries at once: each client gets a TCP RST, as from
/// a firewall's state table flushed or a middlebox restarted, while the
/// database itself stays up.
final class ResettingRelay: Sendable {
    private let listener: Channel
    /// The client side of each relayed connection, while open.
    private let carried: NIOLockedValueBox<[ObjectIdentifier: Channel]>

    var port: Int { listener.localAddress?.port ?? 0 }

    private init(listener: Channel, carried: NIOLockedValueBox<[ObjectIdentifier: Channel]>) {
        self.listener = listener
        self.carried = carried
    }

    static func start(backendSocket: String, group: EventLoopGroup) async throws -> ResettingRelay {
        let carried = NIOLockedValueBox<[ObjectIdentifier: Channel]>([:])
        let listener = try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let key = ObjectIdentifier(inbound)
                carried.withLockedValue { $0[key] = inbound }
                inbound.closeFuture.whenComplete { _ in carried.withLockedValue { _ = $0.removeValue(forKey: key) } }
                let (front, back) = TestSocketGlue.pair()
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture { try outbound.pipeline.syncOperations.addHandler(back) }
                    }
                    .connect(unixDomainSocketPath: backendSocket)
                    .flatMap { _ in
                        inbound.eventLoop.makeCompletedFuture {
                            try inbound.pipeline.syncOperations.addHandler(front)
                        }.flatMap { inbound.setOption(.autoRead, value: true) }
                    }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ResettingRelay(listener: listener, carried: carried)
    }

    /// Connections carried now.
    var count: Int { carried.withLockedValue { $0.count } }

    /// Resets every connection: SO_LINGER 0, then close, so the client reads ECONNRESET.
    /// Returns how many were reset.
    @discardableResult
    func resetAll() async -> Int {
        let channels = carried.withLockedValue { Array($0.values) }
        for channel in channels {
            try? await (channel as? SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            try? await channel.close()
        }
        return channels.count
    }

    func stop() async {
        try? await listener.close()
        await resetAll()
    }
}
