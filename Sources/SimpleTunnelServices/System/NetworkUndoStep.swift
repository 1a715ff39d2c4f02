/// One way back from an applied network setting.
enum UndoStep: Sendable, CustomStringConvertible {
    case command([String])
    case restoreFile(ResolvConfFile.Backup)

    /// What `ip` prints when the thing to delete is already gone: the
    /// interface was deleted (taking its addresses and routes with it) or
    /// someone removed the route by hand. The goal of the undo is met.
    static let alreadyGoneMessages = [
        "Cannot find device",
        "No such device",
        "No such process",
        "Cannot assign requested address",
        // nft, for a table that is gone
        "No such file or directory",
    ]

    func perform(with runner: CommandRunning) throws(NetworkConfigurationError) {
        switch self {
        case .command(let command):
            let result = try runner.run(command, timeout: .seconds(15))
            guard result.status == 0 || Self.alreadyGoneMessages.contains(where: result.standardError.contains) else {
                throw .commandFailed(command: command, status: result.status, standardError: result.standardError)
            }
        case .restoreFile(let backup):
            try ResolvConfFile.restore(backup)
        }
    }

    var description: String {
        switch self {
        case .command(let command):
            return NetworkConfigurationError.shellText(command)
        case .restoreFile(let backup):
            return backup.original == nil ? "remove \(backup.path)" : "restore \(backup.path)"
        }
    }
}
