import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every line, for tests of what is logged and how often.
struct CapturingLogHandler: LogHandler {
    struct Line: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    let lines: NIOLockedValueBox<[Line]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLockedValue { $0.append(Line(level: event.level, message: event.message.description, metadata: event.metadata ?? [:])) }
    }

    /// A logger whose lines end up in `lines`.
    static func logger(_ lines: NIOLockedValueBox<[Line]>) -> Logger {
        Logger(label: "captured") { _ in CapturingLogHandler(lines: lines) }
    }
}
