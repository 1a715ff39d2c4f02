import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// What `perform` says and counts for the actions a caller used to act on
/// after it: each line comes from where the action is carried out.
@Suite("Flow actions performed")
struct FlowActionPerformTests {
    let loop = EmbeddedEventLoop()
    let output = RecordingOutput()

    @Test func localDataAfterTheFlowStoppedSendingIsDroppedAndTraced() {
        let (logger, lines) = CapturingLogHandler.logger()
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: logger)
        let endpoint = RecordingEndpoint()
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }!
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        multiplexer.flowDidReadEndOfFile(identifier)
        multiplexer.flow(identifier, didRead: ByteBuffer(string: "late"), from: nil)
        loop.run()
        #expect(!output.written.contains(.data(identifier: identifier, payload: ByteBuffer(string: "late"))))
        let traced = lines.all.filter { $0.message == "dropped local data for a flow that no longer sends" }
        #expect(traced.map { $0.metadata["bytes"]?.description } == ["4"])
    }

    @Test func aNewOpenOfAClosingFlowReplacesItAndSaysSo() {
        let (logger, lines) = CapturingLogHandler.logger()
        let opener = DeferredOpener()
        let multiplexer = TunnelMultiplexer(
            role: .server(opener: opener, responder: NoRequests()), output: output, eventLoop: loop, logger: logger)
        let request = TunnelOpenRequest.tcp(TunnelEndpoint(host: "h", port: 1))
        multiplexer.receive(.message(.open(identifier: 7, request: request)))
        opener.complete(.success(OpenedFlow(endpoint: .tcp(RecordingEndpoint()))))
        multiplexer.receive(.message(.close(identifier: 7, direction: .write)))
        multiplexer.receive(.message(.open(identifier: 7, request: request)))
        loop.run()
        #expect(opener.requests.count == 2, "the second open is carried out")
        #expect(!output.written.contains(.openResult(identifier: 7, result: .invalidParameter)))
        #expect(lines.all.filter { $0.message == "a new open replaces a flow that was closing" }.count == 1)
    }

    @Test func packetsFromThePeerBeforeTheOpenResultAreDroppedAsNotValidHere() {
        let (logger, lines) = CapturingLogHandler.logger()
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: logger)
        let device = RecordingPacketEndpoint()
        let identifier = multiplexer.openFlow(.plainIP, endpoint: { _ in .ip(device) }) { _ in }!
        let packet = TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 20))
        multiplexer.receive(.message(.packets(identifier: identifier, packets: [packet])))
        #expect(device.written.isEmpty)
        let notices = lines.all.filter { $0.message == "dropping message not valid here" }
        #expect(notices.map { $0.metadata["command"]?.description } == ["\(TunnelCommand.packets)"])
    }
}
