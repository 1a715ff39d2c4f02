import Testing
@testable import SimpleTunnelServices

@Suite("When freed heap is handed back after a peak of tunnels")
struct HeapTrimScheduleTests {
    let start = ContinuousClock.now

    /// Opens up to `count`, one at a time.
    func rise(_ schedule: inout HeapTrimSchedule, to count: Int) {
        for open in 1...count { schedule.opened(openNow: open) }
    }

    /// The decision for each close, in turn: (tunnels open after it, seconds from the start).
    func close(_ schedule: inout HeapTrimSchedule, _ steps: [(open: Int, at: Duration)]) -> [HeapTrimSchedule.Decision] {
        steps.map { schedule.closed(openNow: $0.open, now: start + $0.at) }
    }

    @Test func aSmallPeakIsNeverTrimmed() {
        var schedule = HeapTrimSchedule(minimumPeak: 128)
        rise(&schedule, to: 127)
        let decisions = close(&schedule, (0..<127).reversed().map { ($0, .zero) })
        #expect(decisions.allSatisfy { $0 == .nothing })
    }

    @Test func aLargePeakIsTrimmedOnceBelowAQuarterAndAgainAsItFallsAsFar() {
        var schedule = HeapTrimSchedule(minimumPeak: 128, interval: .seconds(10))
        rise(&schedule, to: 8000)
        // A quarter of the peak is not below it; then 1999 is. Then a quarter of each new peak (1999, 499), at
        // least 10 s apart; 124 left is a small peak, and the rest close without more trims.
        let decisions = close(&schedule, [(2000, .zero), (1999, .zero), (1000, .seconds(20)), (499, .seconds(20)), (124, .seconds(40)), (0, .seconds(60))])
        #expect(decisions == [.nothing, .trimNow, .nothing, .trimNow, .trimNow, .nothing])
        #expect(schedule.peak == 124)
    }

    @Test func aTrimDueTooSoonIsPutOffToTheIntervalsEndOnce() {
        var schedule = HeapTrimSchedule(minimumPeak: 128, interval: .seconds(10))
        rise(&schedule, to: 8000)
        // The rest close within three seconds of the first trim: one check is asked for, at the interval's end.
        let decisions = close(&schedule, [(1999, .zero), (400, .seconds(3)), (0, .seconds(3))])
        #expect(decisions == [.trimNow, .checkAgain(after: .seconds(7)), .nothing])
        let deferred = schedule.deferredCheck(openNow: 0, now: start + .seconds(10))
        #expect(deferred == .trimNow)
        #expect(schedule.peak == 0)
        #expect(close(&schedule, [(0, .seconds(30))]) == [.nothing])
    }

    @Test func aNewPeakAfterATrimCountsAgain() {
        var schedule = HeapTrimSchedule(minimumPeak: 128, interval: .seconds(10))
        rise(&schedule, to: 1000)
        let first = close(&schedule, [(0, .zero)])
        rise(&schedule, to: 600)
        let second = close(&schedule, [(100, .seconds(5))])
        #expect(first + second == [.trimNow, .checkAgain(after: .seconds(5))])
        #expect(schedule.peak == 600)
        // Tunnels came back before the check: nothing to give back now.
        rise(&schedule, to: 300)
        let deferred = schedule.deferredCheck(openNow: 300, now: start + .seconds(10))
        #expect(deferred == .nothing)
    }
}
