import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// A client pipeline and a server pipeline (frame codec, message codec,
/// `TunnelChannelHandler`) joined in memory, pumped by hand: both roles of the
/// multiplexer against each other, with the real wire format in between.
final class BackToBackTunnel {
    let loop = EmbeddedEventLoop()
    let client: EmbeddedChannel
    let server: EmbeddedChannel
    let opener = OpeningRecorder()

    init(limits: TunnelMultiplexer.Limits = .init()) throws {
        client = EmbeddedChannel(loop: loop)
        server = EmbeddedChannel(loop: loop)
        let logger = Logger(label: "back-to-back")
        try client.pipeline.syncOperations.addTunnelMessageCodec()
        try client.pipeline.syncOperations.addHandler(TunnelChannelHandler(role: { .client }, limits: limits, logger: logger))
        let opener = self.opener
        try server.pipeline.syncOperations.addTunnelMessageCodec()
        try server.pipeline.syncOperations.addHandler(
            TunnelChannelHandler(role: { .server(opener: opener, responder: NoRequests()) }, limits: limits, logger: logger))
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        try client.connect(to: address).wait()
        try server.connect(to: address).wait()
    }

    var clientMultiplexer: TunnelMultiplexer {
        get throws { try #require(try client.pipeline.syncOperations.handler(type: TunnelChannelHandler.self).multiplexer) }
    }

    /// Moves bytes both ways until neither side has anything more to send.
    func pump() throws {
        var moved = true
        while moved {
            moved = false
            loop.run()
            while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                try server.writeInbound(bytes)
                moved = true
            }
            while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                try client.writeInbound(bytes)
                moved = true
            }
        }
    }

    /// Sets whether the client's side of the tunnel can take more, as its socket would.
    func clientTunnelWritable(_ writable: Bool) {
        client.isWritable = writable
        client.pipeline.fireChannelWritabilityChanged()
    }

    /// Opens a client flow for a fresh endpoint and pumps until the server answers.
    func openFlow() throws -> (TunnelConnectionIdentifier, RecordingEndpoint) {
        let endpoint = RecordingEndpoint()
        let identifier = try #require(try clientMultiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in })
        try pump()
        return (identifier, endpoint)
    }
}

/// A server opener that opens every request at once and remembers, in one
/// log, the order in which data reached its endpoints.
final class OpeningRecorder: FlowOpener {
    private(set) var endpoints: [TunnelConnectionIdentifier: RecordingEndpoint] = [:]
    /// (flow, bytes) in the order the server wrote them to destination sockets.
    var deliveries: [(TunnelConnectionIdentifier, Int)] = []

    func open(
        _ request: TunnelOpenRequest,
        reporter: FlowReporter,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        let identifier = reporter.identifier
        let endpoint = RecordingEndpoint()
        endpoint.onWrite = { [weak self] data in self?.deliveries.append((identifier, data.readableBytes)) }
        endpoints[identifier] = endpoint
        completion(.success(OpenedFlow(endpoint: .tcp(endpoint))))
    }
}

@Suite("Client and server multiplexers back to back")
struct BackToBackTunnelTests {
    @Test func aKeystrokeIsAmongTheFirstDataSentWhenAFullTunnelDrains() throws {
        let tunnel = try BackToBackTunnel()
        let (bulk, _) = try tunnel.openFlow()
        let (keystrokes, _) = try tunnel.openFlow()
        tunnel.clientTunnelWritable(false)
        let multiplexer = try tunnel.clientMultiplexer
        for _ in 0..<4 {
            multiplexer.flow(bulk, didRead: ByteBuffer(repeating: 1, count: 64 * 1024), from: nil)
        }
        try tunnel.pump()
        multiplexer.flow(keystrokes, didRead: ByteBuffer(string: "k"), from: nil)
        try tunnel.pump()
        #expect(tunnel.opener.deliveries.isEmpty, "nothing goes while the tunnel is full")
        tunnel.clientTunnelWritable(true)
        try tunnel.pump()
        let order = tunnel.opener.deliveries.map(\.0)
        #expect(order.count == 5)
        let position = order.firstIndex(of: keystrokes) ?? Int.max
        #expect(position <= 1, "the keystroke waited behind \(position) bulk messages")
        // Once the bulk flow has had its turn, a new keystroke goes ahead of the rest of it.
        for _ in 0..<4 {
            multiplexer.flow(bulk, didRead: ByteBuffer(repeating: 1, count: 64 * 1024), from: nil)
        }
        tunnel.opener.deliveries.removeAll()
        tunnel.clientTunnelWritable(false)
        try tunnel.pump()
        multiplexer.flow(keystrokes, didRead: ByteBuffer(string: "k"), from: nil)
        tunnel.clientTunnelWritable(true)
        try tunnel.pump()
        #expect(tunnel.opener.deliveries.map(\.0).prefix(2).contains(keystrokes))
    }

    @Test func aFlowOpenedWhileTheTunnelIsFullCarriesDataBothWaysOnceItDrains() throws {
        let tunnel = try BackToBackTunnel()
        tunnel.clientTunnelWritable(false)
        let endpoint = RecordingEndpoint()
        let multiplexer = try tunnel.clientMultiplexer
        var opened = false
        let identifier = try #require(multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) {
            if case .success = $0 { opened = true }
        })
        try tunnel.pump()
        #expect(tunnel.opener.endpoints.isEmpty, "the open waits for the tunnel")
        tunnel.clientTunnelWritable(true)
        try tunnel.pump()
        #expect(opened)
        let destination = try #require(tunnel.opener.endpoints[identifier])
        #expect(endpoint.reading && destination.reading)
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "ping"), from: nil)
        try tunnel.pump()
        #expect(destination.received == [ByteBuffer(string: "ping")])
        let serverMultiplexer = try #require(try tunnel.server.pipeline.syncOperations.handler(type: TunnelChannelHandler.self).multiplexer)
        serverMultiplexer.flow(identifier, didRead: ByteBuffer(string: "pong"), from: nil)
        try tunnel.pump()
        #expect(endpoint.received == [ByteBuffer(string: "pong")])
    }

    @Test func suspendAndResumeTravelAndHoldTheSender() throws {
        let tunnel = try BackToBackTunnel()
        let (identifier, clientEndpoint) = try tunnel.openFlow()
        let destination = try #require(tunnel.opener.endpoints[identifier])
        let serverMultiplexer = try #require(try tunnel.server.pipeline.syncOperations.handler(type: TunnelChannelHandler.self).multiplexer)
        // The destination stops taking writes: the server suspends the client's flow.
        serverMultiplexer.flow(identifier, writabilityChanged: false)
        try tunnel.pump()
        #expect(!clientEndpoint.reading, "the client stops reading the local socket")
        try tunnel.clientMultiplexer.flow(identifier, didRead: ByteBuffer(string: "held"), from: nil)
        try tunnel.pump()
        #expect(destination.received.isEmpty)
        serverMultiplexer.flow(identifier, writabilityChanged: true)
        try tunnel.pump()
        #expect(clientEndpoint.reading)
        #expect(destination.received == [ByteBuffer(string: "held")])
    }

    @Test func aPeerThatDoesNotReadRepliesIsNotReadPastTheControlBacklog() throws {
        var limits = TunnelMultiplexer.Limits()
        limits.controlBacklogLimit = 8
        let tunnel = try BackToBackTunnel(limits: limits)
        let reads = ReadCounter()
        try tunnel.server.pipeline.syncOperations.addHandler(reads, position: .first)
        tunnel.server.isWritable = false
        tunnel.server.pipeline.fireChannelWritabilityChanged()
        let serverMultiplexer = try #require(try tunnel.server.pipeline.syncOperations.handler(type: TunnelChannelHandler.self).multiplexer)
        for _ in 0..<8 {
            serverMultiplexer.receive(.message(.fetchConfiguration(identifier: 0)))
        }
        #expect(!serverMultiplexer.budgets.wantsPeerReads, "eight unanswered replies: the peer is held")
        tunnel.server.read()
        #expect(reads.count == 0, "the socket is not read while the peer is held")
        tunnel.server.isWritable = true
        tunnel.server.pipeline.fireChannelWritabilityChanged()
        #expect(serverMultiplexer.budgets.wantsPeerReads, "the replies went: the peer is read again")
        #expect(reads.count == 1, "the held read goes through")
    }
}

