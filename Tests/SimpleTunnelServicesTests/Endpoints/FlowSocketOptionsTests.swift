import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

#if canImport(Glibc)
import Glibc
#endif

@Suite("A flow socket's TCP options, set once on the listener or per connecting socket", .timeLimit(.minutes(1)))
struct FlowSocketOptionsTests {
    static func tcp(_ channel: Channel, _ name: Int32) async throws -> Int {
        try await channel.getOption(ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name))).get()
    }

    /// Accepted sockets inherit TCP_NODELAY and TCP_USER_TIMEOUT from the
    /// forward's listener: the child initializer no longer sets them, so a
    /// listener without them would leave flows with Nagle and a 15-minute
    /// retransmission give-up.
    @Test func anAcceptedFlowSocketInheritsNoDelayAndTheUserTimeoutFromTheListener() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let accepted = group.next().makePromise(of: Channel.self)
        let listener = try await LocalListener.streamBootstrap(on: group.next()).flowListenerOptions()
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try FlowSocketOptions.applyToAccepted(channel)
                    accepted.succeed(channel)
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = try #require(listener.localAddress?.port)
        let client = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
        let flow = try await accepted.futureResult.get()

        #expect(try await Self.tcp(flow, TCP_NODELAY) == 1)
        #expect(try await Self.tcp(flow, TCP_USER_TIMEOUT) == FlowSocketOptions.userTimeoutMilliseconds)
        #expect(try await flow.getOption(.allowRemoteHalfClosure).get())

        try await client.close()
        try await listener.close()
        try await group.shutdownGracefully()
    }

    /// A socket the server connects has no listener to inherit from: it gets both itself.
    @Test func aConnectedFlowSocketSetsNoDelayAndTheUserTimeout() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let listener = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        let flow = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try FlowSocketOptions.apply(to: channel) }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()

        #expect(try await Self.tcp(flow, TCP_NODELAY) == 1)
        #expect(try await Self.tcp(flow, TCP_USER_TIMEOUT) == FlowSocketOptions.userTimeoutMilliseconds)

        try await flow.close()
        try await listener.close()
        try await group.shutdownGracefully()
    }
}
