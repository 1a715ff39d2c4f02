import NIOCore
import Logging
import NIOConcurrencyHelpers
import SimpleTunnelServices

/// Database notices waiting to be confirmed, one confirmation at a time.
///
/// NOTIFY needs no privilege, so any role that may connect can send notices
/// as fast as it likes; each one costs a query to confirm. Here that costs a
/// bounded amount: a key named again while it waits is confirmed once, one
/// task confirms them in turn, and past `limit` waiting, notices are dropped,
/// counted and logged at most once a minute.
final class NoticeConfirmations<Key: Hashable & Sendable>: Sendable {
    private struct State {
        var waiting = CircularBuffer<Key>()
        var named = Set<Key>()
        var confirming = false
        var dropped = 0
        var droppedLog = LineRateLimiter(interval: .seconds(60))
    }

    let limit: Int
    private let what: String
    private let logger: Logger
    private let confirm: @Sendable (Key) async -> Void
    private let state = NIOLockedValueBox(State())

    /// - Parameter what: the notices, for the log ("logins removed").
    init(limit: Int = 4096, what: String, logger: Logger, confirm: @escaping @Sendable (Key) async -> Void) {
        self.limit = limit
        self.what = what
        self.logger = logger
        self.confirm = confirm
    }

    /// Queues `key` for confirmation. False: dropped, as `limit` notices already wait.
    @discardableResult
    func notice(_ key: Key) -> Bool {
        let (accepted, startConfirming, logDropped) = state.withLockedValue { state -> (Bool, Bool, Int?) in
            guard !state.named.contains(key) else { return (true, false, nil) }
            guard state.waiting.count < limit else {
                state.dropped += 1
                return (false, false, state.droppedLog.admit().map { _ in state.dropped })
            }
            state.waiting.append(key)
            state.named.insert(key)
            defer { state.confirming = true }
            return (true, !state.confirming, nil)
        }
        if let logDropped {
            logger.warning(
                "database notices of \(what) dropped unconfirmed: more than \(limit) were waiting (a role that may connect to the database sends them faster than they can be checked)",
                metadata: ["dropped-so-far": "\(logDropped)"])
        }
        if startConfirming {
            Task { await confirmWaiting() }
        }
        return accepted
    }

    /// How many wait, and how many were dropped so far.
    var counts: (waiting: Int, dropped: Int) {
        state.withLockedValue { ($0.waiting.count, $0.dropped) }
    }

    private func confirmWaiting() async {
        while let key = state.withLockedValue({ state -> Key? in
            guard let key = state.waiting.popFirst() else {
                state.confirming = false
                return nil
            }
            state.named.remove(key)
            return key
        }) {
            await confirm(key)
        }
    }
}
