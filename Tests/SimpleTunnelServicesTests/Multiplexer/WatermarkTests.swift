import Testing
@testable import SimpleTunnelServices

@Suite("The watermark every buffer pauses and resumes by")
struct WatermarkTests {
    @Test func itPausesAtTheHighMarkAndGoesOnOnlyAtTheLowOne() {
        var level = WatermarkedLevel(Watermark(high: 100))
        #expect(level.mark.low == 50)
        #expect(level.add(99) == nil)
        #expect(level.add(1) == .paused)
        #expect(level.add(-49) == nil, "51 is above the low mark: still paused")
        #expect(level.isPaused)
        #expect(level.add(-1) == .resumed)
        #expect(level.add(49) == nil)
        #expect(level.add(-99) == nil, "never below zero in use, and resumed already")
    }

    @Test func theRuleIsTheSameForEveryLevelAndEitherHistory() {
        let mark = Watermark(high: 256, low: 64)
        for level in [0, 63, 64, 65, 255, 256, 1000] {
            #expect(mark.isPaused(at: level, wasPaused: false) == (level >= 256))
            #expect(mark.isPaused(at: level, wasPaused: true) == (level > 64))
        }
    }
}
