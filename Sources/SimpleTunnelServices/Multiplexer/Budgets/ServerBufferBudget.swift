import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// Bytes all the tunnels of a server hold for their peers (flow queues, early
/// data, data past `suspend`), against one budget: each tunnel's own budgets
/// bound one peer, this bounds them all together.
///
/// Tunnels charge what they hold as it changes (one atomic add). A tunnel that
/// finds the server over budget pauses and waits to be told, on its own event
/// loop, that the total has fallen to the low mark; the budget keeps those
/// waiters, so no tunnel is left paused by a change it did not see.
public final class ServerBufferBudget: Sendable {
    /// Past the high mark the tunnels stop taking more, until the total falls to the low one.
    let mark: Watermark
    public var limit: Int { mark.high }
    private let total = Atomic<Int>(0)
    private let waiters = NIOLockedValueBox<[ObjectIdentifier: Waiter]>([:])

    struct Waiter: Sendable {
        let eventLoop: EventLoop
        let resume: @Sendable () -> Void
    }

    public init(limit: Int) {
        self.mark = Watermark(high: limit)
    }

    /// A budget for a machine of this much memory: a quarter of it, at most 1 GiB.
    public static func forPhysicalMemory(_ bytes: UInt64) -> ServerBufferBudget {
        ServerBufferBudget(limit: Int(min(bytes / 4, 1 << 30)))
    }

    /// Bytes held by every tunnel now.
    public var heldBytes: Int { total.load(ordering: .relaxed) }

    /// Adds (or, negative, gives back) what a tunnel holds; returns whether the
    /// server is within its budget afterwards.
    func charge(_ bytes: Int) -> Bool {
        let now = total.add(bytes, ordering: .relaxed).newValue
        if bytes < 0, !mark.isPaused(at: now, wasPaused: true) {
            wakeWaiters()
        }
        return !mark.isPaused(at: now, wasPaused: false)
    }

    /// The tunnel is paused for the server's budget: `resume` runs on its
    /// event loop once the total has fallen to the low mark (at once if it has).
    func wait(_ tunnel: ObjectIdentifier, on eventLoop: EventLoop, resume: @escaping @Sendable () -> Void) {
        waiters.withLockedValue { $0[tunnel] = Waiter(eventLoop: eventLoop, resume: resume) }
        // The total may have fallen between the charge and the registration.
        if !mark.isPaused(at: total.load(ordering: .relaxed), wasPaused: true) {
            wakeWaiters()
        }
    }

    /// The tunnel is gone: it waits no more.
    func forget(_ tunnel: ObjectIdentifier) {
        _ = waiters.withLockedValue { $0.removeValue(forKey: tunnel) }
    }

    private func wakeWaiters() {
        let woken = waiters.withLockedValue { waiters -> [Waiter] in
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in woken {
            waiter.eventLoop.execute(waiter.resume)
        }
    }
}
