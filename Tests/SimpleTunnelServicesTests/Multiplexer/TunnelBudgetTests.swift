import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// What one tunnel may hold for its peer, in all, and what happens past it.
@Suite("Tunnel budgets")
struct TunnelBudgetTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()

    @Test func earlyDataPastTheTunnelsBudgetHoldsThePeerUntilOpensComplete() {
        var limits = TunnelMultiplexer.Limits()
        limits.tunnelEarlyDataBudget = 1024 * 1024
        let opener = DeferredOpener()
        let multiplexer = TunnelMultiplexer(
            role: .server(opener: opener, responder: NoRequests()), output: output, eventLoop: loop, limits: limits, logger: Logger(label: "test"))
        // Eight flows still connecting, each within its own 256 KiB allowance.
        for identifier in 1...8 as ClosedRange<TunnelConnectionIdentifier> {
            multiplexer.receive(.message(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: "h", port: 1)))))
            multiplexer.receive(.message(.data(identifier: identifier, payload: ByteBuffer(repeating: 1, count: 200 * 1024))))
        }
        #expect(!multiplexer.budgets.wantsPeerReads, "1.6 MiB of early data is past the tunnel's 1 MiB")
        #expect(multiplexer.currentStatistics.openFlows == 8, "no flow is refused for it: the peer is only slowed")
        var destinations: [RecordingEndpoint] = []
        for _ in 1...5 {
            let endpoint = RecordingEndpoint()
            destinations.append(endpoint)
            opener.complete(.success(OpenedFlow(endpoint: .tcp(endpoint))))
        }
        #expect(!multiplexer.budgets.wantsPeerReads, "600 KiB still held: above half of the budget the peer stays held")
        let sixth = RecordingEndpoint()
        destinations.append(sixth)
        opener.complete(.success(OpenedFlow(endpoint: .tcp(sixth))))
        #expect(multiplexer.budgets.wantsPeerReads, "400 KiB held, under half of the budget: the peer is read again")
        #expect(destinations.allSatisfy { $0.received.reduce(0) { $0 + $1.readableBytes } == 200 * 1024 })
    }

    @Test func flowQueuesPastTheTunnelsBudgetStopEveryFlowReadingUntilHalfOfItIsSent() {
        var limits = TunnelMultiplexer.Limits()
        limits.tunnelBufferBudget = 512 * 1024
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, limits: limits, logger: Logger(label: "test"))
        var flows: [(TunnelConnectionIdentifier, RecordingEndpoint)] = []
        for _ in 0..<4 {
            let endpoint = RecordingEndpoint()
            let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
            multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
            flows.append((identifier, endpoint))
        }
        loop.run()
        output.capacity = output.written.count
        multiplexer.tunnelWritabilityChanged(false)
        for (identifier, _) in flows.prefix(3) {
            multiplexer.flow(identifier, didRead: ByteBuffer(repeating: 2, count: 200 * 1024), from: nil)
        }
        #expect(flows.allSatisfy { !$0.1.reading }, "600 KiB queued: past the 512 KiB budget no flow reads, not even an idle one")
        #expect(multiplexer.budgets.wantsPeerReads, "a client never holds its server back")
        output.capacity = Int.max
        multiplexer.tunnelWritabilityChanged(true)
        loop.run()
        #expect(flows.allSatisfy { $0.1.reading }, "the queues went: every flow reads again")
    }

    @Test func tunnelsTogetherPastTheServersBudgetPauseUntilItFallsToHalf() {
        let budget = ServerBufferBudget(limit: 1024 * 1024)
        var limits = TunnelMultiplexer.Limits()
        limits.flowQueueHighWatermark = 2 * 1024 * 1024
        limits.flowQueueLowWatermark = 1024 * 1024
        let outputs = [RecordingOutput(), RecordingOutput()]
        let tunnels = outputs.map {
            TunnelMultiplexer(role: .client, output: $0, eventLoop: loop, limits: limits, serverBudget: budget, logger: Logger(label: "test"))
        }
        var flows: [(TunnelConnectionIdentifier, RecordingEndpoint)] = []
        for tunnel in tunnels {
            let endpoint = RecordingEndpoint()
            let identifier = tunnel.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
            tunnel.receive(.message(.openResult(identifier: identifier, result: .success)))
            flows.append((identifier, endpoint))
        }
        loop.run()
        for (output, tunnel) in zip(outputs, tunnels) {
            output.capacity = output.written.count
            tunnel.tunnelWritabilityChanged(false)
        }
        // Each tunnel within its own 8 MiB, the two together past the server's 1 MiB.
        tunnels[0].flow(flows[0].0, didRead: ByteBuffer(repeating: 1, count: 700 * 1024), from: nil)
        #expect(flows[0].1.reading)
        tunnels[1].flow(flows[1].0, didRead: ByteBuffer(repeating: 1, count: 400 * 1024), from: nil)
        #expect(budget.heldBytes == 1100 * 1024)
        #expect(!flows[1].1.reading, "the tunnel that crossed the server's budget pauses")
        tunnels[0].flow(flows[0].0, didRead: ByteBuffer(repeating: 1, count: 1), from: nil)
        #expect(!flows[0].1.reading, "so does the next one that takes more")
        // The first tunnel drains: the total falls under half and both are told.
        outputs[0].capacity = Int.max
        tunnels[0].tunnelWritabilityChanged(true)
        loop.run()
        #expect(budget.heldBytes == 400 * 1024)
        #expect(flows[0].1.reading && flows[1].1.reading, "both go on once the server is under half of its budget")
        tunnels[1].tunnelClosed()
        tunnels[0].tunnelClosed()
        #expect(budget.heldBytes == 0, "a closed tunnel gives back everything it held")
    }

    @Test func aPeerFloodingRefusedOpensGetsOneNoticeASecondNotOneEach() {
        let (logger, lines) = CapturingLogHandler.logger()
        var limits = TunnelMultiplexer.Limits()
        limits.maximumFlows = 1
        let multiplexer = TunnelMultiplexer(
            role: .server(opener: DeferredOpener(), responder: NoRequests()), output: output, eventLoop: loop, limits: limits,
            logger: logger)
        for identifier in 1...500 as ClosedRange<TunnelConnectionIdentifier> {
            multiplexer.receive(.message(.open(identifier: identifier, request: .tcp(TunnelEndpoint(host: "h", port: 1)))))
        }
        loop.run()
        let refusals = output.written.filter { if case .openResult(_, .refused, _, _) = $0 { true } else { false } }
        #expect(refusals.count == 499, "every refused open is still answered")
        let notices = lines.all.filter { $0.message == "refusing open" }
        #expect(notices.count <= 2, "\(notices.count) lines for one peer's flood")
    }
}
