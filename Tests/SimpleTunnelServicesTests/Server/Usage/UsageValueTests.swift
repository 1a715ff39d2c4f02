import Foundation
import Testing
@testable import SimpleTunnelServices

/// The values behind `tunnel-server usage`: the ledger that reads tunnels'
/// counters, the book a store keeps per day, and the day itself.
@Suite("Usage per login: ledger, book and day")
struct UsageValueTests {
    /// Held, so the two identifiers stay different.
    let tunnels = (NSObject(), NSObject())
    var tunnel: ObjectIdentifier { ObjectIdentifier(tunnels.0) }
    var other: ObjectIdentifier { ObjectIdentifier(tunnels.1) }
    let noon = Date(timeIntervalSince1970: 1_795_867_200)  // 2026-11-28T12:00:00Z

    @Test func aTunnelsCountersCountOnlyWhatGrewSinceTheLastReading() {
        var ledger = UsageLedger()
        ledger.read(tunnel, login: "alice", fromClient: 100, toClient: 1_000, now: noon)
        ledger.read(tunnel, login: "alice", fromClient: 150, toClient: 1_000, now: noon)
        ledger.read(other, login: "alice", fromClient: 1, toClient: 2, now: noon)
        let taken = ledger.take()
        #expect(taken == [UsageRecord(login: "alice", day: UsageDay(noon), usage: LoginUsage(bytesFromClient: 151, bytesToClient: 1_002, lastSeen: noon))])
        #expect(ledger.isEmpty)
        // After a take, only growth counts again; the close adds its last growth and forgets the tunnel.
        ledger.closed(tunnel, login: "alice", fromClient: 160, toClient: 1_500, now: noon)
        #expect(ledger.take().map(\.usage.bytesToClient) == [500])
        ledger.read(tunnel, login: "alice", fromClient: 5, toClient: 5, now: noon)
        #expect(ledger.take().map(\.usage.bytesToClient) == [5], "a new tunnel that reuses the identifier starts from zero")
    }

    @Test func aSmallerReadingCountsNothingRatherThanWrapping() {
        var ledger = UsageLedger()
        ledger.read(tunnel, login: "alice", fromClient: 100, toClient: 100, now: noon)
        _ = ledger.take()
        ledger.read(tunnel, login: "alice", fromClient: 50, toClient: 50, now: noon)
        ledger.read(tunnel, login: "alice", fromClient: 120, toClient: 100, now: noon)
        #expect(ledger.take().map(\.usage.bytesFromClient) == [20])
    }

    @Test func aLoginIsSeenWithoutTrafficAndDaysAreKeptApart() {
        var ledger = UsageLedger()
        ledger.seen("bob", now: noon)
        let tomorrow = noon.addingTimeInterval(86_400)
        ledger.read(tunnel, login: "bob", fromClient: 10, toClient: 20, now: tomorrow)
        let records = ledger.take().sorted { $0.day < $1.day }
        #expect(records.map(\.day.text) == ["2026-11-28", "2026-11-29"])
        #expect(records.map(\.usage.bytesToClient) == [0, 20])
        #expect(records.map(\.usage.lastSeen) == [noon, tomorrow])
    }

    @Test func whatAStoreRefusedIsOfferedAgainWithWhatCameSince() {
        var ledger = UsageLedger()
        ledger.read(tunnel, login: "alice", fromClient: 10, toClient: 10, now: noon)
        let refused = ledger.take()
        ledger.read(tunnel, login: "alice", fromClient: 15, toClient: 10, now: noon)
        ledger.giveBack(refused)
        #expect(ledger.take().map(\.usage.bytesFromClient) == [15])
    }

    @Test func theBookSumsDaysFromTheFirstAskedAndKeepsTheLatestSighting() {
        var book = UsageBook()
        let day1 = noon, day2 = noon.addingTimeInterval(86_400), day3 = noon.addingTimeInterval(2 * 86_400)
        book.add([
            UsageRecord(login: "alice", day: UsageDay(day1), usage: LoginUsage(bytesFromClient: 1, bytesToClient: 10, lastSeen: day1)),
            UsageRecord(login: "alice", day: UsageDay(day2), usage: LoginUsage(bytesFromClient: 2, bytesToClient: 20, lastSeen: day2)),
            UsageRecord(login: "alice", day: UsageDay(day2), usage: LoginUsage(bytesFromClient: 4, bytesToClient: 40, lastSeen: day2)),
            UsageRecord(login: "bob", day: UsageDay(day1), usage: LoginUsage(bytesFromClient: 7, lastSeen: day1)),
        ])
        #expect(book.totals()["alice"] == LoginUsage(bytesFromClient: 7, bytesToClient: 70, lastSeen: day2))
        #expect(book.totals(since: UsageDay(day2)) == ["alice": LoginUsage(bytesFromClient: 6, bytesToClient: 60, lastSeen: day2)])
        #expect(book.totals(since: UsageDay(day3)).isEmpty)
    }

    @Test(arguments: [
        ("2026-11-01", "2026-11-01"), ("2026-11-28T23:30:00Z", "2026-11-28"), ("2026-11-28T23:30:00-02:00", "2026-11-29"),
    ])
    func daysAreReadInUTC(text: String, day: String) {
        #expect(UsageDay(parsing: text)?.text == day)
    }

    @Test(arguments: ["yesterday", "2026-13-01", "", "28/11/2026", "2026-11-28 junk"])
    func whatIsNotADayIsRefused(text: String) {
        #expect(UsageDay(parsing: text) == nil)
    }

    @Test func aUsageFileSurvivesBeingOpenedAgainAndABadOneIsRefusedByName() async throws {
        let folder = NSTemporaryDirectory() + "usage-file-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/state/usage.json"
        let file = try UsageFile(path: path)
        try await file.add([UsageRecord(login: "alice", day: UsageDay(noon), usage: LoginUsage(bytesFromClient: 3, bytesToClient: 4, lastSeen: noon))])
        let again = try UsageFile(path: path)
        #expect(try await again.totals(since: nil) == ["alice": LoginUsage(bytesFromClient: 3, bytesToClient: 4, lastSeen: noon)])
        var mode = stat()
        #expect(stat(path, &mode) == 0 && mode.st_mode & 0o777 == 0o600)

        try Data("{\"logins\": 7}".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try UsageFile(path: path)
        } throws: { error in
            "\(error)".contains("\(path) is not a usage file") && "\(error)".contains("move it away to start counting from zero")
        }
    }

    @Test func aFileThatCannotBeWrittenLosesNothingInMemory() async throws {
        let folder = NSTemporaryDirectory() + "usage-blocked-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = try UsageFile(path: folder + "/usage.json")
        // The replacement file's place is taken: every save fails, as on a full disk.
        try FileManager.default.createDirectory(atPath: folder + "/usage.json.tmp-\(getpid())/in-the-way", withIntermediateDirectories: true)
        await #expect(throws: UsageFileError.self) {
            try await file.add([UsageRecord(login: "alice", day: UsageDay(noon), usage: LoginUsage(bytesFromClient: 1, lastSeen: noon))])
        }
        #expect(try await file.totals(since: nil).isEmpty, "a record the file did not take is not shown as kept")
    }
}
