import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// A role that may connect can NOTIFY as fast as it likes: what its notices
/// cost the server is bounded and counted.
@Suite("Database notices: a flood costs a bounded, counted amount", .timeLimit(.minutes(3)))
struct NoticeConfirmationsTests {
    /// Holds every confirmation until released, recording the keys confirmed.
    final class Gate: Sendable {
        let confirmed = NIOLockedValueBox<[Int]>([])
        let released = NIOLockedValueBox(false)

        func confirm(_ key: Int) async {
            while !released.withLockedValue({ $0 }) {
                try? await Task.sleep(for: .milliseconds(5))
            }
            confirmed.withLockedValue { $0.append(key) }
        }
    }

    @Test func aFloodIsCutAtTheLimitRepeatsAreConfirmedOnceAndTheRestAllAreConfirmed() async throws {
        let gate = Gate()
        let (logger, logs) = CapturingLogHandler.logger()
        let confirmations = NoticeConfirmations<Int>(limit: 100, what: "sessions taken over", logger: logger, confirm: gate.confirm)

        // The first is taken at once and held; 100 more wait; the next 9,899 are dropped.
        #expect(confirmations.notice(0))
        #expect(await Loopback.waitUntil(seconds: 10) { confirmations.counts.waiting == 0 })
        var accepted = 0
        for key in 1..<10_000 where confirmations.notice(key) { accepted += 1 }
        #expect(accepted == 100)
        #expect(confirmations.counts == (waiting: 100, dropped: 9_899))
        // A key named again while it waits costs nothing more.
        #expect(confirmations.notice(50))
        #expect(confirmations.counts == (waiting: 100, dropped: 9_899))
        // One warning for the whole flood, with the count so far.
        let warnings = logs.all.filter { $0.message.contains("dropped unconfirmed") }
        #expect(warnings.count == 1, "\(warnings.map(\.message))")
        #expect(warnings.first?.metadata["dropped-so-far"] == "1")

        gate.released.withLockedValue { $0 = true }
        #expect(await Loopback.waitUntil(seconds: 10) { gate.confirmed.withLockedValue { $0.count } == 101 })
        #expect(gate.confirmed.withLockedValue { $0 } == Array(0...100), "each confirmed once, in the order noticed")
        // Room again: a later notice is confirmed.
        #expect(confirmations.notice(20_000))
        #expect(await Loopback.waitUntil(seconds: 10) { gate.confirmed.withLockedValue { $0.last } == 20_000 })
    }
}
