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
