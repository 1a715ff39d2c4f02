import Foundation
import Logging
import Testing
@testable import SimpleTunnelServices

/// Log lines as journald and a person read them: a syslog priority prefix and
/// no time when stderr is the journal's stream, the time and level's word
/// elsewhere, the message before its sorted metadata, and no line a peer's
/// newline could forge.
@Suite("Journal-friendly log lines", .timeLimit(.minutes(3)))
struct JournalLogHandlerTests {
    static let levels: [(Logger.Level, Int)] = [
        (.critical, 3), (.error, 3), (.warning, 4), (.notice, 5), (.info, 6), (.debug, 7), (.trace, 7),
    ]

    @Test func everyLevelInBothStyles() {
        let metadata: Logger.Metadata = ["changed": "nothing"]
        for (level, priority) in Self.levels {
            #expect(
                JournalLogHandler.line(level: level, label: "tunnel-server", message: "configuration reloaded", metadata: metadata, style: .journal)
                    == "<\(priority)>configuration reloaded changed=nothing\n")
            #expect(
                JournalLogHandler.line(
                    level: level, label: "tunnel-server", message: "configuration reloaded", metadata: metadata,
                    style: .plain(timestamp: "2026-11-28T10:00:00+0000"))
                    == "2026-11-28T10:00:00+0000 \(level) tunnel-server: configuration reloaded changed=nothing\n")
        }
    }

    @Test func metadataIsSortedAndNewlinesAreEscaped() {
        let line = JournalLogHandler.line(
            level: .notice, label: "tunnel-server", message: "login \"eve\nnotice tunnel-server: login accepted\"",
            metadata: ["tunnels": "2", "login": "a\r\nb", "from": "203.0.113.7:50112"], style: .journal)
        #expect(line == "<5>login \"eve\\nnotice tunnel-server: login accepted\" from=203.0.113.7:50112 login=a\\r\\nb tunnels=2\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(JournalLogHandler.line(level: .info, label: "x", message: "plain", metadata: [:], style: .journal) == "<6>plain\n")
    }

    @Test func theJournalIsRecognisedByItsDeviceAndInode() throws {
        let path = NSTemporaryDirectory() + "journal-stream-\(UUID().uuidString.prefix(8))"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        var status = stat()
        try #require(fstat(descriptor, &status) == 0)
        let own = "\(status.st_dev):\(status.st_ino)"
        #expect(JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": own], descriptor: descriptor))
        // Inherited by a child that writes elsewhere: another inode, or another device.
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"], descriptor: descriptor))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(status.st_dev + 1):\(status.st_ino)"], descriptor: descriptor))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: [:], descriptor: descriptor))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "garbage"], descriptor: descriptor))
    }

    /// The built server, its stderr a file named in JOURNAL_STREAM as systemd would: priority prefixes, no timestamps.
    // A loaded machine may take many seconds to hash and start: the waits are generous, the SIGHUP only after the listener is up.
    // 'listening on 127.0.0.1:', not 'listening on': the policy note says "listening on loopback" before SIGHUP is trapped.
    @Test(.timeLimit(.minutes(4))) func theServerWritesPriorityPrefixesToTheJournal() async throws {
        let folder = NSTemporaryDirectory() + "journal-server-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let log = folder + "/stderr"
        FileManager.default.createFile(atPath: log, contents: nil)
        var status = stat()
        try #require(stat(log, &status) == 0)
        // A users file that breaks before SIGHUP: the failed reload is an error, <3>, which `journalctl -p err` shows.
        let script = """
            exec 2>>"$1"; export JOURNAL_STREAM="$2"
            printf 'correct horse\\n' | "$3" passwd alice --users "$4/users" --iterations 100000 >/dev/null
            "$3" serve --port 0 --plaintext --users "$4/users" --state-directory "$4" --control "$4/server.sock" & server=$!
            for _ in $(seq 1200); do grep -q 'listening on 127.0.0.1:' "$1" && break; sleep 0.1; done
            echo broken >"$4/users"; kill -HUP $server
            for _ in $(seq 1200); do grep -q 'not reloaded' "$1" && break; sleep 0.1; done
            kill -TERM $server; wait $server
            """
        let result = try await ExternalProcess.run(
            "/bin/sh", ["-c", script, "sh", log, "\(status.st_dev):\(status.st_ino)", BuiltPrograms.tunnelServer, folder], timeout: 200)
        #expect(result.status == 0, "\(String(decoding: result.output + result.errors, as: UTF8.self))")
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<5>listening on 127.0.0.1:") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<3>users file not reloaded") }, "\(lines)")
        let logged = lines.filter { $0.hasPrefix("<") }
        #expect(!logged.isEmpty && logged.allSatisfy { $0.firstMatch(of: /^<[3-7]>/) != nil && $0.firstMatch(of: /\d{4}-\d\d-\d\dT/) == nil }, "\(lines)")
    }
}
