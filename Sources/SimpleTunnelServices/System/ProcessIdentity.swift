import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A process as /proc knows it: its id and its start time (clock ticks since
/// boot), so that a recycled process id is not taken for the process that
/// wrote a journal; and the network namespace it changed (the inode of
/// `/proc/self/ns/net`), so that a journal is undone only where it applies.
struct ProcessIdentity: Codable, Hashable, Sendable {
    var processID: Int32
    var startTime: UInt64
    var networkNamespace: UInt64

    /// This process, now.
    static func current() throws(NetworkConfigurationError) -> ProcessIdentity {
        let processID = getpid()
        guard let start = startTime(of: processID) else {
            throw .fileAccessFailed(path: "/proc/self/stat", operation: "read", reason: "no start time in it")
        }
        var status = stat()
        guard stat("/proc/self/ns/net", &status) == 0 else {
            throw .fileAccessFailed(path: "/proc/self/ns/net", operation: "examine", reason: String(cString: strerror(errno)))
        }
        return ProcessIdentity(processID: processID, startTime: start, networkNamespace: UInt64(status.st_ino))
    }

    /// Whether the process that wrote this is still running.
    var isRunning: Bool {
        Self.startTime(of: processID) == startTime
    }

    /// Field 22 of /proc/PID/stat, read after the command name (which may hold spaces and parentheses).
    static func startTime(of processID: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(processID)/stat", encoding: .utf8) else { return nil }
        return parseStartTime(stat: text)
    }

    static func parseStartTime(stat text: String) -> UInt64? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // After ") " come field 3 (state) onwards; the start time is field 22.
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }
}
