import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// Flows whose first decisions fall while the tunnel cannot take more must
/// still read once it drains: a flow that is never told to read again is a
/// flow that never answers.
@Suite("Flows never stall")
struct FlowStallTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()

    func dataMessages(for identifier: TunnelConnectionIdentifier) -> [ByteBuffer] {
        output.written.compactMap { message in
            if case .data(identifier, let payload, _) = message { return payload }
            return nil
        }
    }

    @Test func aClientFlowOpenedWhileTheTunnelIsFullReadsOnceItDrains() {
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: Logger(label: "test"))
        output.capacity = 0
        multiplexer.tunnelWritabilityChanged(false)
        let endpoint = RecordingEndpoint()
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        output.capacity = Int.max
        multiplexer.tunnelWritabilityChanged(true)
        loop.run()
        #expect(endpoint.reading, "the flow was never told to read")
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "ping"), from: nil)
        loop.run()
        #expect(dataMessages(for: identifier) == [ByteBuffer(string: "ping")])
    }

    @Test func aServerFlowThatOpensWhileTheTunnelIsFullReadsOnceItDrains() {
        let opener = DeferredOpener()
        let multiplexer = TunnelMultiplexer(
            role: .server(opener: opener, responder: NoRequests()), output: output, eventLoop: loop, logger: Logger(label: "test"))
        multiplexer.receive(.message(.open(identifier: 7, request: .tcp(TunnelEndpoint(host: "h", port: 1)))))
        output.capacity = output.written.count
        multiplexer.tunnelWritabilityChanged(false)
        let endpoint = RecordingEndpoint()
        opener.complete(.success(OpenedFlow(endpoint: .tcp(endpoint))))
        loop.run()
        output.capacity = Int.max
        multiplexer.tunnelWritabilityChanged(true)
        loop.run()
        #expect(output.written.contains(.openResult(identifier: 7, result: .success)))
        #expect(endpoint.reading, "the destination socket was never read")
        multiplexer.flow(7, didRead: ByteBuffer(string: "pong"), from: nil)
        loop.run()
        #expect(dataMessages(for: 7) == [ByteBuffer(string: "pong")])
    }

    @Test func aFlowThatReadWhileTheTunnelWasFullIsSentOnceItDrains() {
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: Logger(label: "test"))
        let endpoint = RecordingEndpoint()
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        output.capacity = output.written.count
        multiplexer.tunnelWritabilityChanged(false)
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "held"), from: nil)
        loop.run()
        #expect(dataMessages(for: identifier).isEmpty)
        output.capacity = Int.max
        multiplexer.tunnelWritabilityChanged(true)
        loop.run()
        #expect(dataMessages(for: identifier) == [ByteBuffer(string: "held")])
        #expect(endpoint.reading)
    }
}

/// An opener whose answer the test gives when it chooses.
final class DeferredOpener: FlowOpener {
    private(set) var requests: [(TunnelConnectionIdentifier, TunnelOpenRequest)] = []
    private var completions: [(Result<OpenedFlow, FlowOpenFailure>) -> Void] = []

    func open(
        _ request: TunnelOpenRequest,
        reporter: FlowReporter,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        let identifier = reporter.identifier
        requests.append((identifier, request))
        completions.append(completion)
    }

    /// Answers the oldest open still waiting.
    func complete(_ result: Result<OpenedFlow, FlowOpenFailure>) {
        guard !completions.isEmpty else { return }
        completions.removeFirst()(result)
    }
}

/// A responder for tests that send no tunnel-level requests.
final class NoRequests: TunnelRequestResponder {
    func configurationForFetch() -> [String: PropertyListValue] { [:] }
    func resolveDNS(_ query: ByteBuffer, completion: @escaping (Result<(answer: ByteBuffer, source: String), Error>) -> Void) {}
}
