import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// What a finished command printed and how it exited.
public struct CommandResult: Sendable, Hashable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    public init(status: Int32, standardOutput: String = "", standardError: String = "") {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }
}

/// Runs a program with an argument array (never through a shell). A seam so
/// tests can check exactly which commands a configurator issues.
public protocol CommandRunning: Sendable {
    /// Runs `command` (program name first, looked up in the search path) to
    /// completion; kills it after `timeout`. A non-zero exit is a result, not an error.
    func run(_ command: [String], timeout: Duration) throws(NetworkConfigurationError) -> CommandResult
}

extension CommandRunning {
    /// Runs `command` and throws `commandFailed`, with its standard error, unless it exits 0.
    func runChecked(_ command: [String], timeout: Duration = .seconds(15)) throws(NetworkConfigurationError) -> CommandResult {
        let result = try run(command, timeout: timeout)
        guard result.status == 0 else {
            throw .commandFailed(command: command, status: result.status, standardError: result.standardError)
        }
        return result
    }
}

/// `CommandRunning` with `ChildProcess` (posix_spawn). Blocks the calling thread:
/// call it off event loops.
public struct SystemCommandRunner: CommandRunning {
    public let searchPath: [String]

    /// `PATH` plus the sbin directories where `ip` and `sysctl` live but which
    /// a non-login environment often leaves out.
    public init(searchPath: [String]? = nil) {
        let environment = ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map(String.init) ?? []
        self.searchPath = searchPath ?? (environment + ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
    }

    /// The executable `program` resolves to, or nil.
    public func locate(_ program: String) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        return searchPath.lazy.map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs where the process's network capabilities are: after `--run-as`, only one thread keeps them.
    public func run(_ command: [String], timeout: Duration) throws(NetworkConfigurationError) -> CommandResult {
        try Privileges.run { () throws(NetworkConfigurationError) in try runHere(command, timeout: timeout) }
    }

    private func runHere(_ command: [String], timeout: Duration) throws(NetworkConfigurationError) -> CommandResult {
        guard let program = command.first else {
            throw .launchFailed(command: command, reason: "empty command")
        }
        guard let executable = locate(program) else {
            throw .programNotFound(program, searched: searchPath)
        }
        let child: ChildProcess
        do {
            // From "/": after --run-as the working directory may be one the new user cannot enter.
            child = try ChildProcess(executable, arguments: Array(command.dropFirst()), directory: "/")
        } catch {
            throw .launchFailed(command: command, reason: error.description)
        }
        let finished = child.finish(timeout: timeout)
        guard !finished.timedOut else {
            throw .timedOut(command: command, seconds: Int(timeout.components.seconds))
        }
        return CommandResult(
            status: finished.status ?? -1,
            standardOutput: String(decoding: finished.output, as: UTF8.self),
            standardError: String(decoding: finished.errors, as: UTF8.self)
        )
    }
}
