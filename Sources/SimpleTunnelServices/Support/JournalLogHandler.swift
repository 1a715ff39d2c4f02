import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Log lines on standard error, as journald or a person reads them. Under
/// systemd (stderr is the journal's stream) each line starts with its syslog
/// priority, `<3>` to `<7>`, so `journalctl -p err` finds a failed reload;
/// journald keeps its own time, so none is written. Elsewhere a line starts
/// with the time and the level's word. Either way the message comes first and
/// its metadata after it, sorted.
public struct JournalLogHandler: LogHandler {
    public enum Style: Equatable, Sendable {
        /// Stderr is the journal: a priority prefix, no time.
        case journal
        /// A terminal or a file: the time and the level's word.
        case plain(timestamp: String)
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let toJournal: Bool

    public init(label: String, toJournal: Bool = JournalLogHandler.standardErrorIsJournal()) {
        self.label = label
        self.toJournal = toJournal
        self.metadataProvider = LoggingSystem.metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        if let error = event.error { merged["error"] = "\(error)" }
        let style: Style = toJournal ? .journal : .plain(timestamp: Self.timestamp())
        StandardError.write(Self.line(level: event.level, label: label, message: "\(event.message)", metadata: merged, style: style))
    }

    /// One line, newline included. Newlines in the message and the values
    /// are escaped: a peer's text in them cannot start a line of its own.
    public static func line(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, style: Style) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\(escaped("\($0.value)"))" }.joined()
        let text = escaped(message) + fields + "\n"
        switch style {
        case .journal: return "<\(priority(of: level))>" + text
        case .plain(let timestamp): return "\(timestamp) \(level) \(label): " + text
        }
    }

    /// syslog's priority for a level (sd-daemon(3)): swift-log has no alert or emergency.
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .critical, .error: return 3
        case .warning: return 4
        case .notice: return 5
        case .info: return 6
        case .debug, .trace: return 7
        }
    }

    private static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return text }
        return text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whether `descriptor` is the stream systemd connected to the journal:
    /// `$JOURNAL_STREAM` ("DEVICE:INODE") names it, and a child that inherited
    /// the variable but writes elsewhere (a pipe, a file) does not match.
    public static func standardErrorIsJournal(
        environment: [String: String] = ProcessInfo.processInfo.environment, descriptor: CInt = STDERR_FILENO
    ) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        var buffer = [CChar](repeating: 0, count: 64)
        strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(cString: buffer)
    }
}
