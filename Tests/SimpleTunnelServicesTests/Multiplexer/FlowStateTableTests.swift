import Foundation
import Testing
@testable import SimpleTunnelServices

/// Every (state, event) pair of a flow's machine, against `FlowStateTable`.
@Suite("A flow's state table")
struct FlowStateTableTests {
    @Test func eachStateIsReachedByItsPath() {
        for state in FlowStateTable.states {
            #expect(FlowStateTable.reach(state.path, server: state.server).label == state.label)
        }
    }

    @Test func theTableListsEveryPairOnce() {
        let pairs = FlowStateTable.rows.map { "\($0.state) \($0.event)" }
        #expect(Set(pairs).count == pairs.count)
        #expect(pairs.count == FlowStateTable.states.count * FlowEvent.allCases.count)
        let known = Set(FlowStateTable.states.map(\.label) + FlowStateTable.ends + ["trap"])
        for row in FlowStateTable.rows {
            #expect(known.contains(row.next), "\(row.state) \(row.event) leads to \(row.next), not in the table")
        }
    }

    @Test func everyPairDoesWhatTheTableSays() {
        let expected = FlowStateTable.rows
        let observed = FlowStateTable.observed()
        for (want, got) in zip(expected, observed) where want != got {
            Issue.record("table: \(FlowStateTable.format([want]))\nmachine: \(FlowStateTable.format([got]))")
        }
        if expected.count != observed.count {
            Issue.record("the table has \(expected.count) rows, the machine \(observed.count):\n\(FlowStateTable.format(observed))")
        }
    }
}
