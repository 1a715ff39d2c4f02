import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a journal found in the state folder calls for. A journal is undone
/// only when its process is gone and it was written in this network
/// namespace; anything else is left as it is, with the reason: closed when unsure.
enum LeftoverDecision: Equatable {
    case undo
    case removeEmpty
    case leave(String)

    static func decide(_ record: NetworkUndoJournal.Record, ownerRunning: Bool, here: ProcessIdentity) -> LeftoverDecision {
        if record.owner.processID == here.processID && record.owner.startTime == here.startTime {
            return .leave("it is this process's own")
        }
        if ownerRunning { return .leave("tunnel-client (pid \(record.owner.processID)) still runs; stop it instead") }
        if record.isEmpty { return .removeEmpty }
        if record.owner.networkNamespace != here.networkNamespace {
            return .leave("it was written in another network namespace; run `tunnel-client cleanup` there")
        }
        return .undo
    }
}

/// What `NetworkLeftovers.clean` did, for the log and for `tunnel-client cleanup`.
public struct NetworkLeftoverReport: Sendable {
    /// Per journal undone: the owner's process id and the steps, as commands one could run by hand.
    public var undone: [(processID: Int32, steps: [String])] = []
    /// Steps that failed, with the error: their journal stays for another try.
    public var failures: [String] = []
    /// Journals left alone, each with its reason.
    public var left: [String] = []

    public var isEmpty: Bool { undone.isEmpty && failures.isEmpty && left.isEmpty }
}

/// Finds the journals (`NetworkUndoJournal`) of `tunnel-client ip` processes
/// that ended without undoing their changes, and undoes them: the network
/// steps newest first, then the kill switch's.
public enum NetworkLeftovers {
    public static func clean(folder: String, runner: CommandRunning = SystemCommandRunner()) throws(NetworkConfigurationError) -> NetworkLeftoverReport {
        var report = NetworkLeftoverReport()
        // A folder someone else may write to could hold steps they wrote for root to run.
        let examined: ControlSocketFolder?
        do {
            examined = try ControlSocketFolder.examine(folder)
        } catch {
            throw .fileAccessFailed(path: folder, operation: "examine", reason: "\(error)")
        }
        guard let examined else { return report }
        if let refusal = examined.refusal(effectiveUser: geteuid()) {
            throw .fileAccessFailed(path: folder, operation: "trust", reason: "\(refusal)".replacingOccurrences(of: "give --control PATH in a folder of your own", with: "give --state-directory PATH"))
        }
        let here = try ProcessIdentity.current()
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw .fileAccessFailed(path: folder, operation: "list", reason: "\(error)")
        }
        for name in names.sorted() where name.hasPrefix(NetworkUndoJournal.filePrefix) && name.hasSuffix(NetworkUndoJournal.fileSuffix) {
            let path = folder + "/" + name
            guard let record = read(path) else {
                report.left.append("\(path): not a journal this version reads; look at it and remove it by hand")
                continue
            }
            switch LeftoverDecision.decide(record, ownerRunning: record.owner.isRunning, here: here) {
            case .leave(let reason):
                if record.owner.processID != here.processID { report.left.append("\(path): \(reason)") }
            case .removeEmpty:
                unlink(path)
            case .undo:
                var remaining = record
                var done: [String] = []
                remaining.network = undo(record.network, runner: runner, done: &done, failures: &report.failures)
                remaining.guardrail = undo(record.guardrail, runner: runner, done: &done, failures: &report.failures)
                report.undone.append((record.owner.processID, done))
                if remaining.isEmpty {
                    unlink(path)
                } else if let bytes = try? JSONEncoder().encode(remaining) {
                    try? AtomicFile.write(Array(bytes), to: path, permissions: 0o600)
                }
            }
        }
        return report
    }

    /// Undoes `steps` newest first; returns the ones that failed, oldest first.
    private static func undo(_ steps: [UndoStep], runner: CommandRunning, done: inout [String], failures: inout [String]) -> [UndoStep] {
        var failed: [UndoStep] = []
        for step in steps.reversed() {
            do throws(NetworkConfigurationError) {
                try step.perform(with: runner)
                done.append(step.description)
            } catch {
                failures.append("\(step): \(error)")
                failed.insert(step, at: 0)
            }
        }
        return failed
    }

    static func read(_ path: String) -> NetworkUndoJournal.Record? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        // Ours are small regular files; anything else is not read.
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= 1 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count == bytes.count else { return nil }
        return try? JSONDecoder().decode(NetworkUndoJournal.Record.self, from: Data(bytes))
    }
}
