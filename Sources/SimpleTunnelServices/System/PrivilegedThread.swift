import NIOConcurrencyHelpers
import NIOPosix

/// One thread that keeps the process's remaining capabilities after
/// `--run-as` (capabilities belong to threads on Linux): network settings
/// changed or undone later run here, with `ip` started from here.
final class PrivilegedThread: Sendable {
    private let pool: NIOThreadPool

    init() {
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    /// Runs `body` on the thread and waits for it. Blocks: not on an event loop.
    func run<Success, Failure: Error>(_ body: @escaping @Sendable () -> Result<Success, Failure>) -> Result<Success, Failure> {
        let done = ConditionLock(value: false)
        let outcome = NIOLockedValueBox<Result<Success, Failure>?>(nil)
        pool.submit { _ in
            outcome.withLockedValue { $0 = body() }
            done.lock()
            done.unlock(withValue: true)
        }
        done.lock(whenValue: true)
        done.unlock()
        // The pool runs every submitted item: a missing outcome means it was shut down, which never happens.
        guard let result = outcome.withLockedValue({ $0 }) else { preconditionFailure("the privileged thread is gone") }
        return result
    }
}
