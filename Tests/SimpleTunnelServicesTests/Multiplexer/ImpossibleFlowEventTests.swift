import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// Calls only our own mistake could make: the flow machines answer them
/// with `.impossible` (the state tables' "trap" rows check every pair), and
/// the multiplexer traps on that answer in a debug build.
@Suite("Impossible flow events")
struct ImpossibleFlowEventTests {
    @Test func aStreamFlowNamesEachKindOfMistake() {
        var awaiting = FlowState.awaitingOpenResult(.tcp, limits: FlowStateTable.limits, now: .now())
        #expect(Self.event(of: FlowEvent.openSucceeded.apply(to: &awaiting)) == .openSucceededWhenNotOpening)
        var open = FlowStateTable.reach([.openResultSuccess], server: false)
        #expect(Self.event(of: FlowEvent.openFailed.apply(to: &open)) == .openFailedWhenNotOpening)
        var opening = FlowState.opening(.tcp, limits: FlowStateTable.limits, now: .now())
        #expect(Self.event(of: FlowEvent.openResultSuccess.apply(to: &opening)) == .openResultForServerFlow)
    }

    @Test func anIPFlowNamesEachKindOfMistake() {
        var awaiting = IPFlowState.awaitingOpenResult(queueLimit: 4096)
        #expect(Self.ipEvent(of: IPFlowEvent.openSucceeded.apply(to: &awaiting)) == .openSucceededWhenNotOpening)
        var open = IPFlowStateTable.reach([.openSucceeded], server: true)
        #expect(Self.ipEvent(of: IPFlowEvent.openFailed.apply(to: &open)) == .openFailedWhenNotOpening)
        var opening = IPFlowState.opening(queueLimit: 4096)
        #expect(Self.ipEvent(of: IPFlowEvent.openResultSuccess.apply(to: &opening)) == .openResultForServerFlow)
    }

    @Test func onlyTheFirstOfEachKindIsLogged() {
        // Process-wide: another test may have logged this kind already, so only the second call is certain.
        _ = ImpossibleFlowEvent.isFirstInProcess(.phaseBeingModified)
        #expect(!ImpossibleFlowEvent.isFirstInProcess(.phaseBeingModified))
    }

    static func event(of action: FlowAction) -> ImpossibleFlowEvent? {
        if case .impossible(let event) = action { return event }
        return nil
    }

    static func ipEvent(of action: IPFlowAction) -> ImpossibleFlowEvent? {
        if case .impossible(let event) = action { return event }
        return nil
    }
}

#if DEBUG
/// A debug build stops at our own mistake instead of closing the flow and
/// counting it. It starts the test program again, so one test.
@Suite("Impossible flow events trap in a debug build", .timeLimit(.minutes(3)))
struct ImpossibleFlowEventTrapTests {
    @Test func anOpenResultForAServersFlowStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let loop = EmbeddedEventLoop()
            let output = RecordingOutput()
            let multiplexer = TunnelMultiplexer(
                role: .server(opener: DeferredOpener(), responder: NoRequests()), output: output, eventLoop: loop, logger: Logger(label: "test"))
            multiplexer.receive(.message(.open(identifier: 7, request: .tcp(TunnelEndpoint(host: "h", port: 1)))))
            multiplexer.transition(7) { $0.openResultReceived(.success, configuration: nil, detail: nil) }
        }
    }

    /// A local end reporting what only the other kind of flow does is our own
    /// mistake too: one table, one lookup, and the kind it finds decides.
    @Test func aLocalEventOfTheOtherKindStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let loop = EmbeddedEventLoop()
            let multiplexer = TunnelMultiplexer(role: .client, output: RecordingOutput(), eventLoop: loop, logger: Logger(label: "test"))
            let identifier = multiplexer.openFlow(.plainIP, endpoint: { _ in .ip(RecordingPacketEndpoint()) }) { _ in }
            multiplexer.receive(.message(.openResult(identifier: identifier ?? 0, result: .success)))
            multiplexer.flowDidReadEndOfFile(identifier ?? 0)
        }
    }

    /// The same call on a client's flow is no mistake, so the test above stops for the reason it names.
    @Test func theSameCallOnAClientsFlowIsFine() {
        let loop = EmbeddedEventLoop()
        let multiplexer = TunnelMultiplexer(role: .client, output: RecordingOutput(), eventLoop: loop, logger: Logger(label: "test"))
        let endpoint = RecordingEndpoint()
        let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in }
        let action = identifier.flatMap { id in multiplexer.transition(id) { $0.openResultReceived(.success, configuration: nil, detail: nil) } }
        #expect(action.map { ImpossibleFlowEventTests.event(of: $0) == nil } == true)
    }
}
#endif
