import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs password checks on a thread pool within `PasswordCheckLimits`;
/// one per server, shared by every tunnel.
public final class PasswordChecker: Sendable {
    private struct Job: Sendable {
        let source: ClientAddressGroup
        let eventLoop: EventLoop
        let verify: @Sendable () -> Bool
        let promise: EventLoopPromise<Bool>
    }

    public let limits: PasswordCheckLimits
    private let queue: NIOLockedValueBox<PasswordCheckQueue<Job>>
    private let threadPool: NIOThreadPool
    private let started = NIOLockedValueBox(0)
    private let finished = NIOLockedValueBox(0)

    public init(limits: PasswordCheckLimits = PasswordCheckLimits(), threadPool: NIOThreadPool = .singleton) {
        self.limits = limits
        self.queue = NIOLockedValueBox(PasswordCheckQueue(limits: limits))
        self.threadPool = threadPool
    }

    /// Checks started so far (tests count the hashes a flood got).
    var checksStarted: Int { started.withLockedValue { $0 } }

    /// Checks whose answer has been handed to the waiting login (tests wait
    /// for it instead of sleeping through a hash).
    var checksFinished: Int { finished.withLockedValue { $0 } }

    /// Runs `verify` when there is room; fails with `PasswordCheckRefusal` when there is none.
    func check(source: ClientAddressGroup, on eventLoop: EventLoop, _ verify: @escaping @Sendable () -> Bool) -> EventLoopFuture<Bool> {
        let job = Job(source: source, eventLoop: eventLoop, verify: verify, promise: eventLoop.makePromise())
        do {
            if let now = try queue.withLockedValue({ try $0.submit(job, from: source) }) {
                run(now)
            }
        } catch {
            job.promise.fail(error)
        }
        return job.promise.futureResult
    }

    private func run(_ job: Job) {
        started.withLockedValue { $0 += 1 }
        threadPool.runIfActive(eventLoop: job.eventLoop, job.verify).whenComplete { [self] result in
            job.promise.completeWith(result)
            finished.withLockedValue { $0 += 1 }
            if let next = queue.withLockedValue({ $0.finish(from: job.source) }) {
                run(next)
            }
        }
    }
}
