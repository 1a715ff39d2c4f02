import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("CoDel: dropping by waiting time")
struct CoDelTests {
    /// One CoDel, asked at times given in milliseconds from a fixed start.
    final class Law {
        var codel = CoDel()
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

        func drops(waited sojourn: Int64, queued bytes: Int = 1024 * 1024, at milliseconds: Int64) -> Bool {
            codel.shouldDrop(sojourn: .milliseconds(sojourn), queuedBytes: bytes, now: start + .milliseconds(milliseconds))
        }
    }

    @Test func aQueueThatDrainsWithinTheTargetNeverDropsHoweverFull() {
        let law = Law()
        for step in Int64(0)..<1000 {
            #expect(!law.drops(waited: 4, queued: 64 * 1024 * 1024, at: step))
        }
        #expect(law.codel.count == 0)
    }

    @Test func aDelayAboveTheTargetDropsOnlyAfterAWholeIntervalThenEverMoreOften() {
        let law = Law()
        #expect(!law.drops(waited: 20, at: 0), "the first time above the target starts the interval")
        #expect(!law.drops(waited: 20, at: 99))
        #expect(law.drops(waited: 20, at: 100), "a whole interval above the target")
        #expect(law.codel.dropping && law.codel.count == 1)
        // The next drop comes interval / sqrt(count) later: 100 ms, then 70.7 ms, then 57.7 ms.
        #expect(!law.drops(waited: 20, at: 199))
        #expect(law.drops(waited: 20, at: 200))
        #expect(!law.drops(waited: 20, at: 270))
        #expect(law.drops(waited: 20, at: 271))
        #expect(!law.drops(waited: 20, at: 328))
        #expect(law.drops(waited: 20, at: 329))
        #expect(law.codel.count == 4)
    }

    @Test func aHeadBackBelowTheTargetEndsTheDroppingAndRestartsTheInterval() {
        let law = Law()
        _ = law.drops(waited: 20, at: 0)
        #expect(law.drops(waited: 20, at: 100))
        #expect(!law.drops(waited: 1, at: 150))
        #expect(!law.codel.dropping)
        // Above the target again: a whole new interval passes before the next drop.
        #expect(!law.drops(waited: 20, at: 160))
        #expect(!law.drops(waited: 20, at: 259))
        #expect(law.drops(waited: 20, at: 260))
    }

    @Test func aLoneLargePacketIsNeverDroppedForWaiting() {
        let law = Law()
        for step in stride(from: Int64(0), through: 1000, by: 10) {
            #expect(!law.drops(waited: 1000, queued: 64 * 1024, at: step))
        }
    }

    @Test func anOverloadThatReturnsSoonIsMetAtItsLastRate() {
        let law = Law()
        _ = law.drops(waited: 20, at: 0)
        var now: Int64 = 100
        // Six drops in one episode.
        while law.codel.count < 6 {
            if !law.drops(waited: 20, at: now) { now += 1 }
        }
        _ = law.drops(waited: 1, at: now)
        _ = law.drops(waited: 20, at: now + 10)
        #expect(law.drops(waited: 20, at: now + 110))
        #expect(law.codel.count == 5, "the last episode dropped 5 times after its first: the new one starts there, not at 1")
    }
}
