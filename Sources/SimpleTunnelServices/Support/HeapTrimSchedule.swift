/// When to hand freed heap back to the kernel after a peak of tunnels
/// (`MallocTuning.trim`): once the open tunnels fall below a quarter of a
/// large peak, at most once per `interval`. A trim due within the interval is
/// put off to its end, not dropped: the tunnels may all have closed by then,
/// and no close would come to ask again. After a trim the peak is the count
/// then, so the next trim waits for that to fall as far again.
///
/// Why: the heap a peak grew stays fragmented below its top once the tunnels
/// close, and the trim threshold (`MallocTuning`) never reaches it; a quiet
/// server would keep hundreds of MiB it no longer uses.
public struct HeapTrimSchedule: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        case nothing
        case trimNow
        /// Ask again (`deferredCheck`) after this long.
        case checkAgain(after: Duration)
    }

    /// A smaller peak leaves too little behind to be worth a trim.
    public let minimumPeak: Int
    public let interval: Duration
    public private(set) var peak = 0
    private var lastTrim: ContinuousClock.Instant?
    /// A deferred check is on its way: no second one is asked for.
    private var checkPending = false

    public init(minimumPeak: Int = 128, interval: Duration = .seconds(10)) {
        self.minimumPeak = minimumPeak
        self.interval = interval
    }

    public mutating func opened(openNow: Int) {
        peak = max(peak, openNow)
    }

    public mutating func closed(openNow: Int, now: ContinuousClock.Instant) -> Decision {
        guard peak >= minimumPeak, openNow * 4 < peak else { return .nothing }
        if let lastTrim, now - lastTrim < interval {
            guard !checkPending else { return .nothing }
            checkPending = true
            return .checkAgain(after: interval - (now - lastTrim))
        }
        lastTrim = now
        peak = openNow
        return .trimNow
    }

    /// The check `checkAgain` asked for.
    public mutating func deferredCheck(openNow: Int, now: ContinuousClock.Instant) -> Decision {
        checkPending = false
        return closed(openNow: openNow, now: now)
    }
}
