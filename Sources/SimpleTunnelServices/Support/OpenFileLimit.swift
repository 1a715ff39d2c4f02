#if canImport(Glibc)
import Glibc
#endif

/// The process's RLIMIT_NOFILE. Every tunnel and every flow is a file
/// descriptor, and the usual soft limit (1024) is far below what a server
/// needs, while the hard limit an administrator set is usually much higher.
public struct OpenFileLimit: Sendable, Equatable, CustomStringConvertible {
    public var soft: Int
    public var hard: Int

    public var description: String { "soft \(soft), hard \(hard)" }

    /// The limits now; nil only if the kernel will not say.
    public static func current() -> OpenFileLimit? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return nil }
        return OpenFileLimit(soft: Self.count(limit.rlim_cur), hard: Self.count(limit.rlim_max))
    }

    /// Raises the soft limit as far as the hard limit allows, once at start.
    /// Returns the limits before and after (after == before when nothing could be raised).
    @discardableResult
    public static func raiseSoftLimitToHardLimit() -> (before: OpenFileLimit, after: OpenFileLimit)? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return nil }
        let before = OpenFileLimit(soft: Self.count(limit.rlim_cur), hard: Self.count(limit.rlim_max))
        let target = raisedSoftLimit(current: limit.rlim_cur, hard: limit.rlim_max, kernelMaximum: kernelMaximum())
        guard target > limit.rlim_cur else { return (before, before) }
        limit.rlim_cur = target
        guard setrlimit(Self.resource, &limit) == 0 else { return (before, before) }
        return (before, current() ?? before)
    }

    /// RLIM_INFINITY, which Swift does not import: `(rlim_t) -1`.
    static let unlimited = rlim_t.max

    /// The soft limit to ask for: the hard limit, except that an unlimited
    /// hard limit cannot be the soft one (setrlimit refuses anything above
    /// fs.nr_open), so then the kernel's maximum.
    static func raisedSoftLimit(current: rlim_t, hard: rlim_t, kernelMaximum: rlim_t?) -> rlim_t {
        var target = hard
        if hard == unlimited {
            guard let kernelMaximum else { return current }
            target = kernelMaximum
        }
        return max(current, target)
    }

    /// fs.nr_open: the most descriptors one process may have.
    static func kernelMaximum() -> rlim_t? {
        guard let file = fopen("/proc/sys/fs/nr_open", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return rlim_t(text.filter(\.isNumber))
    }

    private static func count(_ value: rlim_t) -> Int {
        value == unlimited || value > rlim_t(Int.max) ? Int.max : Int(value)
    }

    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
}
