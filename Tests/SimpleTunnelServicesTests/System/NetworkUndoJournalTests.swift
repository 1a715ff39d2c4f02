import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("The undo journal and its leftovers, by value and in a temporary folder", .timeLimit(.minutes(3)))
struct NetworkUndoJournalTests {
    let here = ProcessIdentity(processID: 100, startTime: 5000, networkNamespace: 4_026_531_840)

    func record(owner: ProcessIdentity, steps: Int = 1) -> NetworkUndoJournal.Record {
        NetworkUndoJournal.Record(owner: owner, network: Array(repeating: .command(["ip", "route", "del", "10.0.0.0/8"]), count: steps))
    }

    @Test func aJournalIsUndoneOnlyWhenItsProcessIsGoneAndItWasWrittenHere() {
        let gone = ProcessIdentity(processID: 200, startTime: 10, networkNamespace: here.networkNamespace)
        #expect(LeftoverDecision.decide(record(owner: gone), ownerRunning: false, here: here) == .undo)
        #expect(LeftoverDecision.decide(record(owner: gone, steps: 0), ownerRunning: false, here: here) == .removeEmpty)
        guard case .leave(let running) = LeftoverDecision.decide(record(owner: gone), ownerRunning: true, here: here) else {
            Issue.record("a running client's journal would be undone")
            return
        }
        #expect(running.contains("still runs"))
        var elsewhere = gone
        elsewhere.networkNamespace += 1
        guard case .leave(let other) = LeftoverDecision.decide(record(owner: elsewhere), ownerRunning: false, here: here) else {
            Issue.record("another namespace's journal would be undone here")
            return
        }
        #expect(other.contains("another network namespace"))
        #expect(LeftoverDecision.decide(record(owner: here), ownerRunning: true, here: here) == .leave("it is this process's own"))
    }

    @Test func theStartTimeIsReadAfterACommandNameWithSpacesAndParentheses() {
        let line = "4242 (tunnel (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 12 3 0 0 20 0 9 0 987654 123456789 2000"
        #expect(ProcessIdentity.parseStartTime(stat: line) == 987654)
        #expect(ProcessIdentity.parseStartTime(stat: "4242 (short) S 1") == nil)
        #expect(ProcessIdentity.parseStartTime(stat: "no parenthesis") == nil)
        let me = try? ProcessIdentity.current()
        #expect(me?.isRunning == true)
    }

    @Test func stepsRoundTripThroughJSONAndRejectEmptyOrUnknownShapes() throws {
        let steps: [UndoStep] = [
            .command(["nft", "delete", "table", "inet", "simpletunnel_client_stun1"]),
            .restoreFile(ResolvConfFile.Backup(path: "/etc/resolv.conf", original: Array("nameserver 1.1.1.1\n".utf8), createdDirectory: nil)),
            .restoreFile(ResolvConfFile.Backup(path: "/etc/netns/x/resolv.conf", original: nil, createdDirectory: "/etc/netns/x")),
        ]
        let decoded = try JSONDecoder().decode([UndoStep].self, from: JSONEncoder().encode(steps))
        #expect(decoded.map(\.description) == steps.map(\.description))
        guard case .restoreFile(let backup) = decoded[1] else {
            Issue.record("not a file restore: \(decoded[1])")
            return
        }
        #expect(backup.original == Array("nameserver 1.1.1.1\n".utf8))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UndoStep.self, from: Data(#"{"command":[]}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UndoStep.self, from: Data(#"{"run":["rm"]}"#.utf8)) }
    }

    @Test func aShorterRecordWrittenOverALongerOneStillReadsWhole() throws {
        let folder = NSTemporaryDirectory() + "journal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let journal = try NetworkUndoJournal.create(in: folder)
        let long = Array(repeating: UndoStep.command(["ip", "-6", "route", "del", "blackhole", "::/1"]), count: 20)
        try journal.record(.network, steps: long)
        try journal.record(.guardrail, steps: [.command(["nft", "delete", "table", "inet", "t"])])
        #expect(NetworkLeftovers.read(journal.path)?.network.count == 20)
        try journal.record(.network, steps: [])
        let read = try #require(NetworkLeftovers.read(journal.path))
        #expect(read.network.isEmpty && read.guardrail.count == 1)
        #expect(read.owner == (try ProcessIdentity.current()))
        // Our own journal is never undone by our own cleanup.
        let report = try NetworkLeftovers.clean(folder: folder)
        #expect(report.undone.isEmpty && report.failures.isEmpty)
        try journal.record(.guardrail, steps: [])
        #expect(journal.finish() == nil)
        #expect(!FileManager.default.fileExists(atPath: journal.path))
    }

    @Test func aFolderOthersMayWriteToIsRefused() throws {
        let folder = NSTemporaryDirectory() + "journal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o777)
        #expect(throws: NetworkConfigurationError.self) { try NetworkLeftovers.clean(folder: folder) }
        #expect(throws: NetworkConfigurationError.self) { try NetworkUndoJournal.create(in: folder) }
    }

    @Test func anUnreadableRecordIsLeftAloneAndNamed() throws {
        let folder = NSTemporaryDirectory() + "journal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data("{\"owner\": 1}".utf8).write(to: URL(fileURLWithPath: folder + "/undo-1.json"))
        let report = try NetworkLeftovers.clean(folder: folder)
        #expect(report.left.count == 1 && report.left[0].contains("remove it by hand"), "\(report.left)")
        #expect(FileManager.default.fileExists(atPath: folder + "/undo-1.json"))
    }
}
