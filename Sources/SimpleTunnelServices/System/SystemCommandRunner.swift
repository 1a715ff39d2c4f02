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

/// `CommandRunning` with Foundation's `Process`. Blocks the calling thread:
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // From "/": after --run-as the working directory may be one the new user cannot enter.
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.arguments = Array(command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            throw .launchFailed(command: command, reason: "\(error)")
        }
        // Drain both pipes while the program runs so it never blocks on a full one.
        let collected = CollectedOutput()
        let drained = DispatchGroup()
        for (handle, isError) in [(output.fileHandleForReading, false), (errorOutput.fileHandleForReading, true)] {
            DispatchQueue.global().async(group: drained) {
                collected.store(readToEnd(handle.fileDescriptor), isError: isError)
            }
        }
        if exited.wait(timeout: .now() + .milliseconds(Int(timeout / .milliseconds(1)))) == .timedOut {
            // SIGKILL: children of a test runner may inherit a blocked SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + .seconds(5))
            throw .timedOut(command: command, seconds: Int(timeout.components.seconds))
        }
        // A grandchild that kept a pipe open must not hang us.
        _ = drained.wait(timeout: .now() + .seconds(2))
        return CommandResult(status: process.terminationStatus, standardOutput: collected.text(isError: false), standardError: collected.text(isError: true))
    }
}

/// Everything until end of file. Foundation's `readDataToEndOfFile` traps when
/// a signal interrupts the read; a signal here only means "read again".
private func readToEnd(_ descriptor: Int32) -> Data {
    var collected = Data()
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            collected.append(contentsOf: chunk[0..<count])
        } else if count < 0 && errno == EINTR {
            continue
        } else {
            return collected
        }
    }
}

private final class CollectedOutput: Sendable {
    private let data = NIOLockedValueBox<[Bool: Data]>([:])

    func store(_ chunk: Data, isError: Bool) {
        data.withLockedValue { $0[isError] = chunk }
    }

    func text(isError: Bool) -> String {
        data.withLockedValue { String(decoding: $0[isError] ?? Data(), as: UTF8.self) }
    }
}
