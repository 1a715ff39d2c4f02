import Foundation
import Testing
@testable import SimpleTunnelServices

/// Every (state, event) pair of an IP flow's machine, against `IPFlowStateTable`.
@Suite("An IP flow's state table")
struct IPFlowStateTableTests {
    @Test func eachStateIsReachedByItsPath() {
        for state in IPFlowStateTable.states {
            #expect(IPFlowStateTable.reach(state.path, server: state.server).label == state.label)
        }
    }

    @Test func theTableListsEveryPairOnce() {
        let pairs = IPFlowStateTable.rows.map { "\($0.state) \($0.event)" }
        #expect(Set(pairs).count == pairs.count)
        #expect(pairs.count == IPFlowStateTable.states.count * IPFlowEvent.allCases.count)
    }

    @Test func everyPairDoesWhatTheTableSays() {
        let expected = IPFlowStateTable.rows
        let observed = IPFlowStateTable.observed()
        for (want, got) in zip(expected, observed) where want != got {
            Issue.record("table: \(FlowStateTable.format([want]))\nmachine: \(FlowStateTable.format([got]))")
        }
        if expected.count != observed.count {
            Issue.record("the table has \(expected.count) rows, the machine \(observed.count):\n\(FlowStateTable.format(observed))")
        }
    }
}

#if DEBUG
/// The IP table's "trap" rows, one of each kind: the multiplexer never makes
/// these calls, and a mistake that did stops the tests. Each starts the test
/// program again, so only one per kind of mistake.
@Suite("An IP flow's impossible events", .serialized, .timeLimit(.minutes(3)))
struct IPFlowStateTrapTests {
    @Test func openingAClientsFlowTraps() async {
        await #expect(processExitsWith: .failure) {
            var flow = IPFlowState.awaitingOpenResult(queueLimit: 4096)
            IPFlowEvent.openSucceeded.apply(to: &flow)
        }
    }

    @Test func failingAnOpenFlowsOpenTraps() async {
        await #expect(processExitsWith: .failure) {
            var flow = IPFlowStateTable.reach([.openSucceeded], server: true)
            IPFlowEvent.openFailed.apply(to: &flow)
        }
    }

    @Test func anOpenResultForAServersFlowTraps() async {
        await #expect(processExitsWith: .failure) {
            var flow = IPFlowState.opening(queueLimit: 4096)
            IPFlowEvent.openResultSuccess.apply(to: &flow)
        }
    }

    /// The same calls on the states where the table allows them do not trap,
    /// so the tests above fail for the reason they name.
    @Test func theSameCallsAreFineWhereTheTableAllowsThem() {
        #expect(!IPFlowStateTable.traps(state: "opening", event: .openSucceeded))
        #expect(!IPFlowStateTable.traps(state: "awaiting", event: .openResultSuccess))
        #expect(IPFlowStateTable.traps(state: "awaiting", event: .openSucceeded))
        #expect(IPFlowStateTable.traps(state: "open", event: .openFailed))
        #expect(IPFlowStateTable.traps(state: "opening", event: .openResultSuccess))
    }
}
#endif
