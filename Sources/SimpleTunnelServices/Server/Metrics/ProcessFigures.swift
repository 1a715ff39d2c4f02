import Foundation

/// The process's own figures Prometheus' process collector names
/// (`process_resident_memory_bytes`, `process_open_fds`), read from /proc
/// when a scrape asks: nothing polls between scrapes.
struct ProcessFigures: Sendable, Equatable {
    var residentMemoryBytes: UInt64
    var openDescriptors: Int

    /// Nil when /proc cannot be read (not Linux, or mounted without it).
    static func current() -> ProcessFigures? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = residentPages(statm: statm),
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        else { return nil }
        // The listing opened one descriptor of its own, closed by now: it is in `descriptors`.
        return ProcessFigures(
            residentMemoryBytes: pages * UInt64(sysconf(Int32(_SC_PAGESIZE))), openDescriptors: max(descriptors.count - 1, 0))
    }

    /// statm's second field: resident pages.
    static func residentPages(statm: String) -> UInt64? {
        let fields = statm.split(separator: " ")
        return fields.count > 1 ? UInt64(fields[1]) : nil
    }
}
