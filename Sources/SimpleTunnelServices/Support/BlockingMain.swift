import Dispatch

/// Runs an async program from a synchronous `main`, the main thread waiting
/// here. Swift's async `main` instead ends the main thread (in dispatch_main),
/// and a dead main thread keeps its old user when `--run-as` changes every
/// live thread's: `ps` would still show root.
public enum BlockingMain {
    public static func run(_ program: @escaping @Sendable () async -> Void) -> Never {
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            await program()
            finished.signal()
        }
        finished.wait()
        exit(0)
    }
}

#if canImport(Glibc)
import Glibc
#endif
