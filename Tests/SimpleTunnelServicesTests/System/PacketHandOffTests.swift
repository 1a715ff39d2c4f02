import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// The bound between a TUN device's reader and the event loops it routes to:
/// a reader faster than a loop stops after `maximumInFlight` hand-offs and
/// loses nothing, and a device closed meanwhile frees the waiting reader.
@Suite("Packet hand-off from a reader to event loops", .timeLimit(.minutes(3)))
struct PacketHandOffTests {
    /// Hand-offs from a reader thread to a loop held busy by `gate`.
    final class Reader: @unchecked Sendable {
        // @unchecked: every field is a lock or set before the thread starts.
        let ran = NIOLockedValueBox([Int]())
        let handedOff = NIOLockedValueBox(0)
        /// The hand-off count each time a hand-off waited for room.
        let countsWhileWaiting = NIOLockedValueBox([Int]())
        let closed = NIOLockedValueBox(false)
        let finished = NIOLockedValueBox(false)

        func start(on loop: EventLoop, count: Int) {
            let handOff = PacketHandOff.bounded(isClosed: { [self] in
                countsWhileWaiting.withLockedValue { $0.append(handedOff.withLockedValue { $0 }) }
                return closed.withLockedValue { $0 }
            })
            let thread = Thread { [self] in
                for index in 0..<count {
                    handOff.execute(on: loop) { self.ran.withLockedValue { $0.append(index) } }
                    handedOff.withLockedValue { $0 += 1 }
                }
                finished.withLockedValue { $0 = true }
            }
            thread.start()
        }
    }

    /// Runs `body` with a loop busy until `gate` is signalled; the loop is freed and shut down after.
    func withBusyLoop(_ body: (EventLoop, DispatchSemaphore) async throws -> Void) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let gate = DispatchSemaphore(value: 0)
        group.next().execute { gate.wait() }
        do {
            try await body(group.next(), gate)
        } catch {
            gate.signal()
            try await group.shutdownGracefully()
            throw error
        }
        gate.signal()
        try await group.shutdownGracefully()
    }

    @Test func aReaderFasterThanItsLoopWaitsAtTheBoundAndLosesNothing() async throws {
        try await withBusyLoop { loop, gate in
            let reader = Reader()
            let total = PacketHandOff.maximumInFlight + 10
            reader.start(on: loop, count: total)

            // The reader waits for room only once the bound is reached, and stays there while the loop is busy.
            #expect(await Loopback.waitUntil(seconds: 10) { reader.countsWhileWaiting.withLockedValue { $0.count >= 2 } })
            #expect(reader.countsWhileWaiting.withLockedValue { Set($0) } == [PacketHandOff.maximumInFlight])
            #expect(reader.ran.withLockedValue { $0.isEmpty })

            gate.signal()
            #expect(await Loopback.waitUntil(seconds: 10) { reader.finished.withLockedValue { $0 } })
            #expect(await Loopback.waitUntil(seconds: 10) { reader.ran.withLockedValue { $0.count } == total })
            #expect(reader.ran.withLockedValue { $0 } == Array(0..<total), "in order, none lost")
        }
    }

    @Test func closingTheDeviceFreesAWaitingReaderAndDropsWhatItHeld() async throws {
        try await withBusyLoop { loop, gate in
            let reader = Reader()
            reader.start(on: loop, count: PacketHandOff.maximumInFlight + 3)
            #expect(await Loopback.waitUntil(seconds: 10) { !reader.countsWhileWaiting.withLockedValue { $0.isEmpty } })

            reader.closed.withLockedValue { $0 = true }
            #expect(await Loopback.waitUntil(seconds: 10) { reader.finished.withLockedValue { $0 } }, "the reader is not stuck behind a busy loop")
            gate.signal()
            #expect(await Loopback.waitUntil(seconds: 10) { reader.ran.withLockedValue { $0.count } == PacketHandOff.maximumInFlight })
            // What was queued before the close still runs; the three held back are dropped.
            let ran = reader.ran.withLockedValue { $0 }
            #expect(ran == Array(0..<PacketHandOff.maximumInFlight))
        }
    }
}
