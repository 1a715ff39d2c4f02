import NIOCore

/// A token bucket for one direction of one login's traffic: bytes are charged
/// after they pass, and a charge that leaves the bucket in debt answers with
/// how long to wait before more may pass. Charging afterwards lets a whole
/// turn or read through at once (no chunk is split to fit); the debt keeps
/// the average at the rate. The bucket only decides; its callers hold back
/// reading or sending for the time it names.
public struct BandwidthBucket: Sendable, Hashable {
    public private(set) var bytesPerSecond: Double
    /// What may pass at once after a quiet spell: 50 ms at the rate, at least 64 KiB.
    public private(set) var burst: Double
    private var tokens: Double
    private var last: NIODeadline?

    public init(bytesPerSecond: Double) {
        self.bytesPerSecond = bytesPerSecond
        self.burst = Self.burst(for: bytesPerSecond)
        self.tokens = burst
    }

    /// 1 Mbit/s is 125 000 bytes a second.
    public init(megabitsPerSecond: Double) {
        self.init(bytesPerSecond: megabitsPerSecond * 125_000)
    }

    private static func burst(for rate: Double) -> Double { max(64 * 1024, rate / 20) }

    /// A reload's new rate, in force at once; the debt or credit held so far stays, within the new burst.
    public mutating func setRate(bytesPerSecond rate: Double, now: NIODeadline) {
        refill(now: now)
        bytesPerSecond = rate
        burst = Self.burst(for: rate)
        tokens = min(tokens, burst)
    }

    /// Charges `bytes` that passed at `now`; how long this direction must now wait (nil: none).
    public mutating func charge(_ bytes: Int, now: NIODeadline) -> TimeAmount? {
        refill(now: now)
        tokens -= Double(bytes)
        return wait()
    }

    /// How long until the debt is paid at `now` (nil: nothing owed).
    public mutating func wait(now: NIODeadline) -> TimeAmount? {
        refill(now: now)
        return wait()
    }

    private func wait() -> TimeAmount? {
        guard tokens < 0 else { return nil }
        // At least a millisecond: a timer for less costs more than it saves.
        return .nanoseconds(max(1_000_000, Int64((-tokens / bytesPerSecond * 1e9).rounded(.up))))
    }

    private mutating func refill(now: NIODeadline) {
        if let last, now > last {
            let elapsed = Double((now - last).nanoseconds) / 1e9
            tokens = min(burst, tokens + elapsed * bytesPerSecond)
        }
        if last.map({ now > $0 }) ?? true { last = now }
    }
}
