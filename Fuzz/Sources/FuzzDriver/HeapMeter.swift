import Synchronization

/// The most bytes a block of code had allocated at once beyond what was live
/// when it began, read from the address sanitizer's allocator through its
/// malloc and free hooks (every fuzz build has ASan). This is how a harness
/// holds the decoder to what a frame may make the server hold.
public enum HeapMeter {
    /// Runs `body` and returns its result with the peak of its live heap growth in bytes.
    public static func measure<Result>(_ body: () throws -> Result) rethrows -> (result: Result, peakGrowth: Int) {
        installOnce
        let start = live.load(ordering: .relaxed)
        peak.store(start, ordering: .relaxed)
        let result = try body()
        return (result, peak.load(ordering: .relaxed) - start)
    }

    private static let installOnce: Void = {
        // The hooks' globals are made before a hook can touch them from inside malloc.
        _ = live.load(ordering: .relaxed) + peak.load(ordering: .relaxed)
        _ = __sanitizer_install_malloc_and_free_hooks(onMalloc, onFree)
    }()
}

// Globals, not static members: hooks run inside malloc and must not allocate
// or take a lazy initializer's lock.
private let live = Atomic<Int>(0)
private let peak = Atomic<Int>(0)

private func onMalloc(_ pointer: UnsafeRawPointer?, _ size: Int) {
    let now = live.add(size, ordering: .relaxed).newValue
    var seen = peak.load(ordering: .relaxed)
    while now > seen {
        let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
        if exchanged { break }
        seen = original
    }
}

private func onFree(_ pointer: UnsafeRawPointer?) {
    live.subtract(__sanitizer_get_allocated_size(pointer), ordering: .relaxed)
}

@_silgen_name("__sanitizer_install_malloc_and_free_hooks")
private func __sanitizer_install_malloc_and_free_hooks(
    _ malloc: @convention(c) (UnsafeRawPointer?, Int) -> Void,
    _ free: @convention(c) (UnsafeRawPointer?) -> Void
) -> CInt

@_silgen_name("__sanitizer_get_allocated_size")
private func __sanitizer_get_allocated_size(_ pointer: UnsafeRawPointer?) -> Int
