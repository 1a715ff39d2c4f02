import NIOConcurrencyHelpers
import PostgresNIO

/// The connection pool operations take, and the pools it replaced that still
/// finish operations: a pool is replaced when the database is back after an
/// outage (see `DatabaseHealth`), and a replaced one is closed once the last
/// operation that took it has ended, so no query is cut off midway.
final class DatabasePools: Sendable {
    struct Pool: Sendable {
        let client: PostgresClient
        let number: Int
    }

    private struct State {
        var current: Pool
        var nextNumber = 1
        /// Operations under way, per pool.
        var inFlight: [Int: Int] = [:]
        /// Each running pool's `run`; cancelling it closes the pool.
        var runs: [Int: Task<Void, Never>] = [:]
        /// Replaced pools still finishing operations.
        var retired: Set<Int> = []
        var stopped = false
    }

    private let state: NIOLockedValueBox<State>
    private let makeClient: @Sendable () -> PostgresClient

    init(makeClient: @escaping @Sendable () -> PostgresClient) {
        self.makeClient = makeClient
        self.state = NIOLockedValueBox(State(current: Pool(client: makeClient(), number: 0)))
    }

    /// Runs the first pool and every replacement until the task is cancelled, then closes them all.
    /// `started` is called once the first pool runs.
    func run(started: @Sendable () -> Void) async {
        await launch(state.withLockedValue { $0.current })
        started()
        await withTaskCancellationHandler {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(3600))
            }
        } onCancel: {}
        let runs = state.withLockedValue { state in
            state.stopped = true
            defer { state.runs = [:] }
            return Array(state.runs.values)
        }
        for run in runs { run.cancel() }
        for run in runs { await run.value }
    }

    /// The pool for one operation; give it back with `release` when the operation ends.
    func acquire() -> Pool {
        state.withLockedValue { state in
            state.inFlight[state.current.number, default: 0] += 1
            return state.current
        }
    }

    func release(_ pool: Pool) {
        let close = state.withLockedValue { state -> Task<Void, Never>? in
            let left = (state.inFlight[pool.number] ?? 1) - 1
            state.inFlight[pool.number] = left > 0 ? left : nil
            guard left <= 0, state.retired.remove(pool.number) != nil else { return nil }
            return state.runs.removeValue(forKey: pool.number)
        }
        close?.cancel()
    }

    /// Serves every operation from now on from a fresh pool; the old one closes once its operations have ended.
    func replace() async {
        let fresh = state.withLockedValue { state in
            defer { state.nextNumber += 1 }
            return Pool(client: makeClient(), number: state.nextNumber)
        }
        await launch(fresh)
        let close = state.withLockedValue { state -> Task<Void, Never>? in
            guard !state.stopped else { return state.runs.removeValue(forKey: fresh.number) }
            let old = state.current
            state.current = fresh
            guard state.inFlight[old.number] == nil else {
                state.retired.insert(old.number)
                return nil
            }
            return state.runs.removeValue(forKey: old.number)
        }
        close?.cancel()
    }

    /// Starts `pool`'s run; returns once it has begun, so that no operation asks a pool not yet running
    /// (PostgresNIO warns of that).
    private func launch(_ pool: Pool) async {
        await withCheckedContinuation { (begun: CheckedContinuation<Void, Never>) in
            let run = Task {
                begun.resume()
                await pool.client.run()
            }
            let stopped = state.withLockedValue { state in
                state.runs[pool.number] = run
                return state.stopped
            }
            if stopped { run.cancel() }
        }
        // `run()` marks the pool running first thing; give it that moment.
        try? await Task.sleep(for: .milliseconds(1))
    }

    /// How many pools run now (for tests): one, plus replaced ones still finishing operations.
    var running: Int { state.withLockedValue { $0.runs.count } }
}
