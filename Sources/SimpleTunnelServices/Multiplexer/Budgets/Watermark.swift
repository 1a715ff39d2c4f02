/// The one rule of every buffer here (a flow's queue, a tunnel's budgets, the
/// server's): pause at the high mark, go on only once the level has fallen to
/// the low one, so that nothing flaps at a single threshold.
struct Watermark: Sendable, Hashable {
    let high: Int
    let low: Int

    init(high: Int, low: Int) {
        self.high = high
        self.low = low
    }

    /// Going on at half the high mark.
    init(high: Int) {
        self.init(high: high, low: high / 2)
    }

    /// Whether `level` is past the mark, for something that `wasPaused` before.
    func isPaused(at level: Int, wasPaused: Bool) -> Bool {
        wasPaused ? level > low : level >= high
    }
}

/// A level held against its `Watermark`; `add` says when it crosses a mark.
struct WatermarkedLevel: Sendable, Hashable {
    enum Crossing: Equatable {
        case paused
        case resumed
    }

    let mark: Watermark
    private(set) var level = 0
    private(set) var isPaused = false

    init(_ mark: Watermark) {
        self.mark = mark
    }

    mutating func add(_ bytes: Int) -> Crossing? {
        level += bytes
        let paused = mark.isPaused(at: level, wasPaused: isPaused)
        guard paused != isPaused else { return nil }
        isPaused = paused
        return paused ? .paused : .resumed
    }
}
