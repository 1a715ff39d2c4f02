import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// What a running `tunnel-client ip` has changed outside its own device, kept
/// in a file each time it changes, so that after a crash (SIGKILL, a power cut
/// of the process) the next start, or `tunnel-client cleanup`, can undo it:
/// the routes to the server, the blackholes, the kill switch's table and the
/// rewritten resolv.conf. The device itself goes with the process.
///
/// The file is opened once, before `--run-as` drops the right to create files
/// in a root-owned folder, and rewritten in place: each record is written over
/// the previous one, padded with spaces to at least its length (JSON ignores
/// them), so a reader never sees a mix of two records' bytes.
public final class NetworkUndoJournal: @unchecked Sendable {
    // @unchecked: `record`, `writtenLength` and `descriptor` are guarded by `lock`.

    /// The file's contents.
    struct Record: Codable {
        var owner: ProcessIdentity
        /// Routes, addresses and DNS: undone first.
        var network: [UndoStep] = []
        /// The kill switch: undone last, so nothing leaks while the routes go.
        var guardrail: [UndoStep] = []

        var isEmpty: Bool { network.isEmpty && guardrail.isEmpty }
    }

    /// Which configurator's steps: the two are undone in this order.
    public enum Section: Sendable {
        case network, guardrail
    }

    /// `undo-PID.json`: one file per process, found by `NetworkLeftovers`.
    static func fileName(processID: Int32) -> String { "undo-\(processID).json" }
    static let filePrefix = "undo-"
    static let fileSuffix = ".json"

    public let path: String
    private let folderDescriptor: CInt
    private let lock = NIOLock()
    private var descriptor: CInt
    private var record: Record
    private var writtenLength = 0

    /// Creates this process's journal in `folder` (0700 when it makes it; a
    /// folder others may write to is refused: they could plant steps for root to run).
    public static func create(in folder: String) throws(NetworkConfigurationError) -> NetworkUndoJournal {
        let owner = try ProcessIdentity.current()
        let folderDescriptor: CInt
        do {
            folderDescriptor = try ControlSocketBinding.openFolder(folder, owner: nil)
        } catch {
            throw .fileAccessFailed(path: folder, operation: "use as the state folder", reason: "\(error)".replacingOccurrences(of: "give --control PATH in a folder of your own", with: "give --state-directory PATH"))
        }
        let name = fileName(processID: owner.processID)
        let descriptor = openat(folderDescriptor, name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            close(folderDescriptor)
            throw .fileAccessFailed(path: folder + "/" + name, operation: "create", reason: reason)
        }
        let journal = NetworkUndoJournal(path: folder + "/" + name, folderDescriptor: folderDescriptor, descriptor: descriptor, owner: owner)
        journal.lock.lock()
        defer { journal.lock.unlock() }
        try journal.writeLocked()
        return journal
    }

    private init(path: String, folderDescriptor: CInt, descriptor: CInt, owner: ProcessIdentity) {
        self.path = path
        self.folderDescriptor = folderDescriptor
        self.descriptor = descriptor
        self.record = Record(owner: owner)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        close(folderDescriptor)
    }

    /// Replaces `section`'s steps (oldest first) and writes the file.
    func record(_ section: Section, steps: [UndoStep]) throws(NetworkConfigurationError) {
        lock.lock()
        defer { lock.unlock() }
        switch section {
        case .network: record.network = steps
        case .guardrail: record.guardrail = steps
        }
        try writeLocked()
    }

    /// After a clean stop: removes the file when nothing is left to undo; else
    /// keeps it for `tunnel-client cleanup` and says so.
    public func finish() -> String? {
        lock.withLock {
            guard descriptor >= 0 else { return nil }
            guard record.isEmpty else {
                return "\(path) keeps what could not be undone; `tunnel-client cleanup` tries again"
            }
            close(descriptor)
            descriptor = -1
            let name = (path as NSString).lastPathComponent
            // After --run-as the folder (root's, 0700) may refuse: the empty record left is removed by the next cleanup.
            _ = unlinkat(folderDescriptor, name, 0)
            return nil
        }
    }

    private func writeLocked() throws(NetworkConfigurationError) {
        guard descriptor >= 0 else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var bytes: [UInt8]
        do {
            bytes = Array(try encoder.encode(record))
        } catch {
            throw .fileAccessFailed(path: path, operation: "encode", reason: "\(error)")
        }
        bytes.append(UInt8(ascii: "\n"))
        let length = bytes.count
        if bytes.count < writtenLength { bytes += [UInt8](repeating: UInt8(ascii: " "), count: writtenLength - bytes.count) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .fileAccessFailed(path: path, operation: "write", reason: String(cString: strerror(errno))) }
            offset += count
        }
        // The padding is harmless; trimmed so the file does not keep its largest size.
        if ftruncate(descriptor, off_t(length)) == 0 { writtenLength = length } else { writtenLength = bytes.count }
    }
}
