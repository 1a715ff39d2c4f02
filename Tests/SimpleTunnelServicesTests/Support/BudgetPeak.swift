import NIOConcurrencyHelpers
@testable import SimpleTunnelServices

/// The most a server's budget held while it was watched, sampled every 2 ms.
final class BudgetPeak: Sendable {
    private let peak = NIOLockedValueBox(0)
    private let sampling: Task<Void, Never>

    init(_ budget: ServerBufferBudget) {
        let peak = self.peak
        sampling = Task {
            while !Task.isCancelled {
                let held = budget.heldBytes
                peak.withLockedValue { $0 = max($0, held) }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// Stops watching; the highest sample.
    func stop() -> Int {
        sampling.cancel()
        return peak.withLockedValue { $0 }
    }
}
