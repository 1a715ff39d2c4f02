import Foundation
import NIOConcurrencyHelpers

/// Usage kept across restarts in the state folder's `usage.json`, per login
/// and day, rewritten whole (atomically) when records are added:
///
///     {"logins": {"alice": {"2026-11-28": {"bytesFromClient": 1200, "bytesToClient": 98000, "lastSeen": "2026-11-28T17:00:00Z"}}}}
public final class UsageFile: UsageStore {
    public let path: String
    /// Its name in the server's state folder.
    public static let defaultName = "usage.json"
    /// Read once at start; the file is this book written out.
    private let book: NIOLockedValueBox<UsageBook>

    /// Reads what earlier runs kept; nothing yet when the file does not exist.
    public init(path: String) throws(UsageFileError) {
        self.path = path
        self.book = NIOLockedValueBox(try Self.load(path))
    }

    public func add(_ records: [UsageRecord]) async throws {
        guard !records.isEmpty else { return }
        let failure: (any Error)? = book.withLockedValue { book in
            var grown = book
            grown.add(records)
            do {
                try Self.save(grown, to: path)
            } catch {
                return error
            }
            book = grown
            return nil
        }
        if let failure { throw failure }
    }

    public func totals(since: UsageDay?) async throws -> [String: LoginUsage] {
        book.withLockedValue { $0.totals(since: since) }
    }

    private static func load(_ path: String) throws(UsageFileError) -> UsageBook {
        guard FileManager.default.fileExists(atPath: path) else { return UsageBook() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageFileError("\(path): cannot be read")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(UsageBook.self, from: data)
        } catch {
            throw UsageFileError("\(path) is not a usage file (\(error)); move it away to start counting from zero")
        }
    }

    private static func save(_ book: UsageBook, to path: String) throws(UsageFileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        do {
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            try AtomicFile.write(Array(try encoder.encode(book)), to: path, permissions: 0o600)
        } catch {
            throw UsageFileError("cannot save usage to \(path): \(error)")
        }
    }
}

public struct UsageFileError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
