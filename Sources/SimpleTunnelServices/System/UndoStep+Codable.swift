import Foundation

/// An undo step as the crash journal keeps it: `{"command": [...]}` or
/// `{"restoreFile": {"path": ..., "original": base64 or null, "createdDirectory": ...}}`.
extension UndoStep: Codable {
    private enum CodingKeys: String, CodingKey {
        case command, restoreFile
    }

    private struct FileBackup: Codable {
        var path: String
        var original: Data?
        var createdDirectory: String?
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let command = try container.decodeIfPresent([String].self, forKey: .command) {
            guard !command.isEmpty else {
                throw DecodingError.dataCorruptedError(forKey: .command, in: container, debugDescription: "an empty command")
            }
            self = .command(command)
        } else if let backup = try container.decodeIfPresent(FileBackup.self, forKey: .restoreFile) {
            self = .restoreFile(ResolvConfFile.Backup(path: backup.path, original: backup.original.map(Array.init), createdDirectory: backup.createdDirectory))
        } else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "neither a command nor a file to restore"))
        }
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .command(let command):
            try container.encode(command, forKey: .command)
        case .restoreFile(let backup):
            try container.encode(
                FileBackup(path: backup.path, original: backup.original.map { Data($0) }, createdDirectory: backup.createdDirectory),
                forKey: .restoreFile)
        }
    }
}
