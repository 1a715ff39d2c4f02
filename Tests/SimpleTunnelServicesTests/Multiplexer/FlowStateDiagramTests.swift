import Foundation
import Testing
@testable import SimpleTunnelServices

/// ARCHITECTURE.md draws a flow's life as `FlowStateTable` has it: its phases,
/// and what ends each stream, are written from the table.
@Suite("The flow diagram in ARCHITECTURE.md")
struct FlowStateDiagramTests {
    /// The diagram, made from the table's rows.
    static func diagram() -> String {
        let rows = FlowStateTable.rows.filter { $0.next != "trap" }
        func phase(_ label: String) -> String {
            label == "done" ? "forgotten" : String(label.prefix { $0 != "(" })
        }
        var edges: [(from: String, to: String, events: [String])] = []
        for row in rows where phase(row.state) != phase(row.next) {
            let (from, to) = (phase(row.state), phase(row.next))
            if let index = edges.firstIndex(where: { $0.from == from && $0.to == to }) {
                if !edges[index].events.contains(row.event) { edges[index].events.append(row.event) }
            } else {
                edges.append((from, to, [row.event]))
            }
        }
        // Events in the order `FlowEvent` lists them.
        let order = FlowEvent.allCases.map(\.rawValue)
        func sorted(_ events: [String]) -> String {
            events.sorted { order.firstIndex(of: $0) ?? 0 < order.firstIndex(of: $1) ?? 0 }.joined(separator: ", ")
        }
        var lines = edges.map { "\($0.from.padding(toLength: 10, withPad: " ", startingAt: 0)) ──▶ \($0.to.padding(toLength: 10, withPad: " ", startingAt: 0)) \(sorted($0.events))" }
        for (stream, name) in [("sending", "sending (local to peer)"), ("receiving", "receiving (peer to local)")] {
            var events: [String] = []
            for row in rows where FlowStateTable.ends(stream, from: row.state, to: row.next) && !events.contains(row.event) {
                events.append(row.event)
            }
            lines.append("\(name) ends on: \(sorted(events))")
        }
        return lines.joined(separator: "\n")
    }

    @Test func isWrittenFromTheTable() throws {
        let text = try String(contentsOf: RepositoryPaths.root.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## A flow's life").dropFirst().first?.components(separatedBy: "\n## ").first)
        let block = try #require(section.components(separatedBy: "```\n").dropFirst().first)
        #expect(block.trimmingCharacters(in: .newlines) == Self.diagram(), "ARCHITECTURE.md's flow diagram should read:\n\(Self.diagram())")
    }
}

extension FlowStateTable {
    /// Whether a row ends `stream` ("sending" or "receiving") and the flow lives on.
    static func ends(_ stream: String, from state: String, to next: String) -> Bool {
        func runs(_ label: String) -> Bool {
            label.contains("(both)") || label.contains("(\(stream))")
        }
        return runs(state) && !runs(next) && states.contains { $0.label == next }
    }
}
