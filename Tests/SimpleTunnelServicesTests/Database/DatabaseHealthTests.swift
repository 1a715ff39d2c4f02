import Testing
@testable import SimpleTunnelDatabase

@Suite("When the database is probed, and what a probe's outcome means")
struct DatabaseHealthTests {
    let start = ContinuousClock.now

    /// Whether a probe is due at each of `offsets` from the start, asked in turn (asking one that is due starts it).
    func due(_ health: inout DatabaseHealth, at offsets: [Duration]) -> [Bool] {
        offsets.map { health.probeDue(now: start + $0) }
    }

    @Test func answeringIsNeverProbedAndOperationsWaitForThePool() {
        var health = DatabaseHealth()
        #expect(due(&health, at: [.zero, .seconds(60)]) == [false, false])
        #expect(!health.answersAtOnce)
    }

    @Test func anOperationFindingItAwayMeansAProbeAtOnceThenOneASecond() {
        var health = DatabaseHealth()
        health.operationFoundItAway(now: start)
        #expect(health.state == .suspect)
        #expect(!health.answersAtOnce, "one failure alone may be a slow query: operations still go to the pool")
        #expect(due(&health, at: [.zero, .milliseconds(500)]) == [true, false])
        let verdict = health.probeFinished(gotThrough: false)
        #expect(verdict == .stillAway)
        #expect(health.answersAtOnce)
        let later = due(&health, at: [.milliseconds(999), .seconds(1), .milliseconds(1500), .seconds(2)])
        #expect(later == [false, true, false, true])
    }

    @Test func aProbeThatGetsThroughReplacesThePoolAndOperationsWaitForItAgain() {
        var health = DatabaseHealth()
        health.operationFoundItAway(now: start)
        _ = health.probeDue(now: start)
        let first = health.probeFinished(gotThrough: false)
        health.operationFoundItAway(now: start + .seconds(5))
        #expect(health.awaySince == start, "the outage began at the first failure")
        _ = health.probeDue(now: start + .seconds(20))
        let second = health.probeFinished(gotThrough: true)
        #expect([first, second] == [.stillAway, .replacePool])
        #expect(health.state == .answering && !health.answersAtOnce && health.awaySince == nil)
        #expect(due(&health, at: [.seconds(40)]) == [false])
    }

    @Test func anOperationThatGetsItsAnswerMeanwhileKeepsThePool() {
        var health = DatabaseHealth()
        health.operationFoundItAway(now: start)
        _ = health.probeDue(now: start)
        health.operationSucceeded()
        let verdict = health.probeFinished(gotThrough: true)
        #expect(verdict == .keepPool)
        #expect(health.state == .answering)
    }

    @Test func anOperationsAnswerDoesNotOverruleAProbeThatFoundNoDatabase() {
        // Answered at once while away, no operation reaches the pool; only a probe ends the outage.
        var health = DatabaseHealth()
        health.operationFoundItAway(now: start)
        _ = health.probeDue(now: start)
        let verdict = health.probeFinished(gotThrough: false)
        health.operationSucceeded()
        #expect(verdict == .stillAway)
        #expect(health.state == .away)
        #expect(health.answersAtOnce)
    }
}
