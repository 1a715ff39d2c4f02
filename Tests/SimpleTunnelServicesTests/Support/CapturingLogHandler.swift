import Logging
import NIOConcurrencyHelpers

/// Keeps every line logged through it, for tests that count lines.
struct CapturingLogHandler: LogHandler {
    final class Lines: Sendable {
        private let lines = NIOLockedValueBox<[(message: String, metadata: Logger.Metadata)]>([])
        func append(_ message: String, _ metadata: Logger.Metadata) { lines.withLockedValue { $0.append((message, metadata)) } }
        var all: [(message: String, metadata: Logger.Metadata)] { lines.withLockedValue { $0 } }
    }

    let lines: Lines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append(event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })
    }

    static func logger() -> (Logger, Lines) {
        let lines = Lines()
        return (Logger(label: "capture") { _ in CapturingLogHandler(lines: lines) }, lines)
    }
}
