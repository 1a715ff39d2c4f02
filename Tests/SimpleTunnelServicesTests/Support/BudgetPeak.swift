import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// The most a server's budget held while it was watched, sampled every 2 ms
/// on an event loop of its own: Swift's few cooperative threads may all be
/// busy in a loaded test run, and a sampler waiting for one sees nothing.
final class BudgetPeak: Sendable {
    private let peak = NIOLockedValueBox(0)
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let sampling: RepeatedTask

    init(_ budget: ServerBufferBudget) {
        let peak = self.peak
        sampling = group.next().scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(2)) { _ in
            let held = budget.heldBytes
            peak.withLockedValue { $0 = max($0, held) }
        }
    }

    /// Stops watching; the highest sample.
    func stop() -> Int {
        sampling.cancel()
        let highest = peak.withLockedValue { $0 }
        group.shutdownGracefully { _ in }
        return highest
    }
}
