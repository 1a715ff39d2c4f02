import Foundation
import Testing
@testable import SimpleTunnelServices

/// ARCHITECTURE.md draws a flow's life; every phase the code has is in it.
@Suite("The flow diagram in ARCHITECTURE.md")
struct FlowStateDiagramTests {
    @Test func namesEveryPhase() throws {
        let text = try String(contentsOf: RepositoryPaths.root.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        let diagram = try #require(text.components(separatedBy: "## A flow's life").dropFirst().first?.components(separatedBy: "\n## ").first)
        let phases: [FlowState.Phase] = [.opening(early: [], earlyBytes: 0), .awaitingOpenResult, .open, .cancelled]
        for phase in phases {
            // The case's name, without its values.
            let name = String(describing: phase).prefix { $0 != "(" }
            #expect(diagram.contains(name), "ARCHITECTURE.md's flow diagram does not show \(name)")
        }
        // Adding a case breaks this switch, and so this test, until the diagram is looked at.
        for phase in phases {
            switch phase {
            case .opening, .awaitingOpenResult, .open, .cancelled: break
            }
        }
    }
}
