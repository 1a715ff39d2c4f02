import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

/// `Limits.BandwidthMbit` as values: the bucket's answers, the smallest of a
/// login's groups, a reload's new rate, and what the reader refuses.
@Suite("Bandwidth limits, by value")
struct BandwidthTests {
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(milliseconds: Int64) -> NIODeadline { start + .milliseconds(milliseconds) }

    @Test func theBucketLetsItsBurstThroughThenAsksToWaitForTheDebt() {
        // 16 Mbit/s: 2 000 000 bytes a second, a burst of 50 ms (100 000 bytes).
        var bucket = BandwidthBucket(megabitsPerSecond: 16)
        #expect(bucket.bytesPerSecond == 2_000_000 && bucket.burst == 100_000)
        #expect(bucket.charge(100_000, now: Self.start) == nil)
        // 200 000 bytes more is 100 ms owed.
        #expect(bucket.charge(200_000, now: Self.start) == .milliseconds(100))
        #expect(bucket.wait(now: Self.at(milliseconds: 40)) == .milliseconds(60))
        #expect(bucket.wait(now: Self.at(milliseconds: 100)) == nil)
        // A quiet second refills no more than the burst.
        #expect(bucket.charge(100_000, now: Self.at(milliseconds: 1100)) == nil)
        #expect(bucket.charge(2_000, now: Self.at(milliseconds: 1100)) == .milliseconds(1))
    }

    @Test func overTimeTheBucketPassesItsRate() {
        // Turns of 64 KiB, each sent when the last wait has passed: ten seconds carry ten seconds' worth.
        var bucket = BandwidthBucket(megabitsPerSecond: 16)
        var now = Self.start
        var sent = 0
        while now < Self.start + .seconds(10) {
            sent += 65_536
            if let wait = bucket.charge(65_536, now: now) { now = now + wait }
        }
        #expect((19_900_000...20_200_000).contains(sent), "\(sent) bytes in 10 s")
    }

    @Test func aSmallRateStillPassesWholeTurns() {
        var bucket = BandwidthBucket(megabitsPerSecond: 0.5)
        #expect(bucket.burst == 65_536)
        #expect(bucket.charge(65_536, now: Self.start) == nil)
        #expect(bucket.charge(62_500, now: Self.start) == .seconds(1))
    }

    @Test func theSmallestLimitOfALoginsGroupsWins() throws {
        let rules = try AccessRulesTests.rules([
            "Groups": .dictionary([
                "wide": .dictionary(["Limits": .dictionary(["BandwidthMbit": 100])]),
                "narrow": .dictionary(["Limits": .dictionary(["BandwidthMbit": .real(2.5)])]),
                "open": .dictionary([:]),
            ]),
            "Users": .dictionary([
                "both": .dictionary(["Groups": .strings(["wide", "narrow"])]),
                "wide": .dictionary(["Groups": .strings(["open", "wide"])]),
                "none": .dictionary(["Groups": .strings(["open"])]),
            ]),
        ])
        #expect(rules.profile(for: "both").bandwidthMbit == 2.5)
        #expect(rules.profile(for: "wide").bandwidthMbit == 100)
        #expect(rules.profile(for: "none").bandwidthMbit == nil)
        #expect(rules.profile(for: "stranger").bandwidthMbit == nil)
        #expect(rules.bandwidthLimits == ["both": 2.5, "wide": 100])
        var changed = rules
        changed.groups["wide"]?.bandwidthMbit = 50
        #expect(changed.changes(from: rules) == [#"group "wide": BandwidthMbit 100 → 50"#])
    }

    @Test func aLoginsTunnelsShareOneBucketAndAReloadChangesItAtOnce() {
        let traffic = LoginTraffic(limits: ["slow": 8])
        // 8 Mbit/s is 1 000 000 bytes a second, a burst of 65 536 bytes.
        #expect(traffic.count(65_536, .toPeer, login: "slow", now: Self.start) == nil)
        #expect(traffic.count(1_000_000, .toPeer, login: "slow", now: Self.start) == .seconds(1))
        // The other way has a bucket of its own; a login with no limit none.
        #expect(traffic.count(65_536, .fromPeer, login: "slow", now: Self.start) == nil)
        #expect(traffic.count(100_000_000, .toPeer, login: "fast", now: Self.start) == nil)
        // Twice the rate: the same debt is half the time.
        traffic.setLimits(["slow": 16], now: Self.start)
        #expect(traffic.count(0, .toPeer, login: "slow", now: Self.start) == .milliseconds(500))
        // No limit any more: nothing waits.
        traffic.setLimits([:], now: Self.start)
        #expect(traffic.count(10_000_000, .toPeer, login: "slow", now: Self.start) == nil)
    }

    @Test(arguments: [
        (PropertyListValue.integer(0), "expected a positive number of Mbit/s (above 0, at most 1000000), got 0"),
        (.real(-1), "expected a positive number of Mbit/s"),
        (.real(.nan), "expected a positive number of Mbit/s"),
        (.string("16M"), "expected a positive number of Mbit/s"),
        (.integer(2_000_000), "expected a positive number of Mbit/s"),
    ])
    func aBadRateIsRefusedWithItsKeyPath(value: PropertyListValue, message: String) {
        let server: [String: PropertyListValue] = ["Groups": .dictionary(["g": .dictionary(["Limits": .dictionary(["BandwidthMbit": value])])])]
        #expect {
            try AccessRulesTests.rules(server)
        } throws: { error in
            "\(error)".contains("Server.Groups.g.Limits.BandwidthMbit: \(message)")
        }
    }
}
