import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// A tunnel that takes `capacity` messages before it stops being writable.
final class RecordingOutput: TunnelOutput {
    var written: [TunnelMessage] = []
    var capacity = Int.max
    var flushes = 0

    var isWritable: Bool { written.count < capacity }
    func write(_ message: TunnelMessage) { written.append(message) }
    func flush() { flushes += 1 }
    /// What the multiplexer said about reading the peer, in order.
    var peerReadings: [Bool] = []
    func peerReadingChanged(_ reading: Bool) { peerReadings.append(reading) }
}

/// A local socket that records what the multiplexer does to it.
final class RecordingEndpoint: TCPFlowEndpoint {
    var received: [ByteBuffer] = []
    var reading = false
    var outputShut = false
    var closed = false
    var aborted = false
    var onWrite: ((ByteBuffer) -> Void)?

    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        received.append(data)
        onWrite?(data)
    }
    func flush() {}
    func setReading(_ enabled: Bool) { reading = enabled }
    func shutdownOutput() { outputShut = true }
    func close() { closed = true }
    func abort() {
        aborted = true
        closed = true
    }
    func detach(whenClosed closed: @escaping () -> Void) { closed() }
}

@Suite("Multiplexer with fakes")
struct TunnelMultiplexerTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()

    func clientMultiplexer() -> TunnelMultiplexer {
        TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: Logger(label: "test"))
    }

    /// Opens a client flow and answers it with success.
    func openedFlow(_ multiplexer: TunnelMultiplexer) -> (TunnelConnectionIdentifier, RecordingEndpoint) {
        let endpoint = RecordingEndpoint()
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        return (identifier, endpoint)
    }

    @Test func aTCPFlowSendsEarlyDataUpToTheAllowanceBeforeTheServerAnswers() {
        let multiplexer = clientMultiplexer()
        let endpoint = RecordingEndpoint()
        let destination = TunnelEndpoint(host: "h", port: 1)
        var result: Result<[String: PropertyListValue]?, FlowOpenFailure>?
        let identifier = multiplexer.openFlow(.tcp(destination), endpoint: { _ in .tcp(endpoint) }) { result = $0 }!
        #expect(endpoint.reading, "a request need not wait for the open result")
        for _ in 0..<5 {
            multiplexer.flow(identifier, didRead: ByteBuffer(repeating: 7, count: 64 * 1024), from: nil)
        }
        loop.run()
        let allowance = TunnelMultiplexer.Limits().earlyDataAllowance
        func dataBytes() -> Int {
            output.written.reduce(0) { total, message in
                if case .data(_, let payload, _) = message { return total + payload.readableBytes }
                return total
            }
        }
        #expect(output.written.first == .open(identifier: identifier, request: .tcp(destination)))
        #expect(dataBytes() == allowance)
        #expect(!endpoint.reading, "reading stops at the allowance")
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        #expect(dataBytes() == 5 * 64 * 1024)
        #expect(endpoint.reading)
        guard case .success? = result else {
            Issue.record("expected success, got \(String(describing: result))")
            return
        }
    }

    @Test func aRefusedOpenClosesTheLocalSocketAndReportsTheCode() {
        let multiplexer = clientMultiplexer()
        let endpoint = RecordingEndpoint()
        var failure: FlowOpenFailure?
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) {
            if case .failure(let error) = $0 { failure = error }
        }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .noSuchHost)))
        #expect(failure?.result == .noSuchHost)
        #expect(endpoint.closed)
        #expect(multiplexer.currentStatistics.openFlows == 0)
    }

    @Test func aBulkFlowCannotStarveAnInteractiveOne() {
        let multiplexer = clientMultiplexer()
        let (bulk, _) = openedFlow(multiplexer)
        let (interactive, _) = openedFlow(multiplexer)
        output.written.removeAll()
        for _ in 0..<16 {
            multiplexer.flow(bulk, didRead: ByteBuffer(repeating: 1, count: 64 * 1024), from: nil)
        }
        multiplexer.flow(interactive, didRead: ByteBuffer(string: "keystroke"), from: nil)
        loop.run()
        let order = output.written.compactMap { message -> TunnelConnectionIdentifier? in
            if case .data(let identifier, _, _) = message { return identifier }
            return nil
        }
        #expect(order.count == 17)
        #expect(order.prefix(2).contains(interactive), "the interactive flow waited behind \(order.firstIndex(of: interactive) ?? -1) bulk messages")
    }

    @Test func controlMessagesGoFirstAndNothingIsWrittenWhileTheTunnelIsFull() {
        let multiplexer = clientMultiplexer()
        let (identifier, endpoint) = openedFlow(multiplexer)
        output.written.removeAll()
        output.capacity = 0
        multiplexer.tunnelWritabilityChanged(false)
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "data"), from: nil)
        multiplexer.flow(identifier, writabilityChanged: false)
        loop.run()
        #expect(output.written.isEmpty)
        #expect(endpoint.reading, "a flow keeps reading into its queue while the tunnel is full, up to its watermark")
        output.capacity = Int.max
        multiplexer.tunnelWritabilityChanged(true)
        #expect(output.written == [.suspend(identifier: identifier), .data(identifier: identifier, payload: ByteBuffer(string: "data"))])
        #expect(endpoint.reading)
    }

    @Test func peerSuspendStopsReadingAndSendingUntilResume() {
        let multiplexer = clientMultiplexer()
        let (identifier, endpoint) = openedFlow(multiplexer)
        output.written.removeAll()
        multiplexer.receive(.message(.suspend(identifier: identifier)))
        #expect(!endpoint.reading)
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "held"), from: nil)
        loop.run()
        #expect(output.written.isEmpty)
        multiplexer.receive(.message(.resume(identifier: identifier)))
        loop.run()
        #expect(output.written == [.data(identifier: identifier, payload: ByteBuffer(string: "held"))])
        #expect(endpoint.reading)
    }

    @Test func halfClosesTravelInOrderAndTheFlowIsForgottenAfterBoth() {
        let multiplexer = clientMultiplexer()
        let (identifier, endpoint) = openedFlow(multiplexer)
        output.written.removeAll()
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "last words"), from: nil)
        multiplexer.flowDidReadEndOfFile(identifier)
        loop.run()
        #expect(output.written == [
            .data(identifier: identifier, payload: ByteBuffer(string: "last words")),
            .close(identifier: identifier, direction: .write),
        ])
        multiplexer.receive(.message(.data(identifier: identifier, payload: ByteBuffer(string: "reply"))))
        multiplexer.receive(.message(.close(identifier: identifier, direction: .write)))
        #expect(endpoint.received == [ByteBuffer(string: "reply")])
        #expect(endpoint.outputShut)
        #expect(endpoint.closed)
        #expect(multiplexer.currentStatistics.openFlows == 0)
        // A late close for a forgotten flow passes quietly.
        multiplexer.receive(.message(.close(identifier: identifier, direction: .all)))
    }

    @Test func aCloseOfWriteBeforeTheOpenResultFINsTheSocketOnceTheOpenSucceeds() {
        let multiplexer = clientMultiplexer()
        let endpoint = RecordingEndpoint()
        var opened = false
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { result in
            if case .success = result {
                #expect(!endpoint.outputShut, "the open completes (a SOCKS reply is written) before the FIN")
                opened = true
            }
        }!
        multiplexer.receive(.message(.close(identifier: identifier, direction: .write)))
        #expect(!endpoint.outputShut, "no FIN before the open: a SOCKS client still waits for its reply")
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        #expect(opened)
        #expect(endpoint.outputShut, "the peer ended its stream: the local socket must see its end")
        // The other stream still runs: the local application may go on sending.
        loop.run()
        output.written.removeAll()
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "more"), from: nil)
        loop.run()
        #expect(output.written == [.data(identifier: identifier, payload: ByteBuffer(string: "more"))])
    }

    @Test func theTunnelClosingClosesEveryLocalSocketAndFailsWhatWaits() {
        let multiplexer = clientMultiplexer()
        let (_, open) = openedFlow(multiplexer)
        let pending = RecordingEndpoint()
        var failed = false
        multiplexer.openFlow(.udp, endpoint: { _ in .udp(pending) }) { if case .failure = $0 { failed = true } }
        var configurationFailed = false
        multiplexer.fetchConfiguration { if case .failure = $0 { configurationFailed = true } }
        multiplexer.tunnelClosed()
        #expect(open.closed && pending.closed)
        #expect(failed && configurationFailed)
    }
}

extension TunnelMultiplexerTests {
    /// What an event says its flow needs serves `reconcile` only while no
    /// other event ran: here the socket's write reports its end of file at
    /// once, inside the peer data's event, and reading must stay stopped.
    @Test func anEventInsideAnotherLeavesTheFlowAsItSaysNotAsTheOuterOneFoundIt() {
        let multiplexer = clientMultiplexer()
        let (identifier, endpoint) = openedFlow(multiplexer)
        #expect(endpoint.reading)
        var reported = false
        endpoint.onWrite = { _ in
            guard !reported else { return }
            reported = true
            multiplexer.flowDidReadEndOfFile(identifier)
        }
        multiplexer.receive(.message(.data(identifier: identifier, payload: ByteBuffer(repeating: 1, count: 16))))
        // Before the tick ends: the turn that sends the close would set reading right again.
        #expect(reported)
        #expect(!endpoint.reading, "the local end of file stopped reading; the outer event must not restart it")
        loop.run()
        #expect(!endpoint.reading)
    }
}
