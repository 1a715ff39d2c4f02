import Foundation
import NIOConcurrencyHelpers
import SimpleTunnelServices
#if canImport(Glibc)
import Glibc
#endif

/// A child process (openssl, python3, stunnel) with stdout and stderr merged,
/// started by the product's `ChildProcess` (posix_spawn, not Foundation's
/// `Process`, which crashed the runner holding a thousand descriptors).
/// Tests `defer { process.terminate() }` so it never outlives a failing test.
final class ExternalProcess: Sendable {
    private let child: ChildProcess
    private let collected = OutputBuffer()

    enum StandardInput {
        /// End of file at once.
        case empty
        /// Open and silent until the process is killed.
        case silent
        /// This text, then end of file.
        case text(String)
    }

    init(_ arguments: [String], standardInput: StandardInput = .empty) throws {
        let input: ChildProcess.Input = switch standardInput {
        case .empty: .nothing
        case .silent: .heldOpen
        case .text(let text): .bytes(Array(text.utf8))
        }
        child = try ChildProcess("/usr/bin/env", arguments: arguments, input: input, mergingErrors: true)
        // Drain continuously so the child never blocks on a full pipe.
        let collected = self.collected
        let reader = child.standardOutput
        Thread.detachNewThread {
            _ = ChildProcess.readToEnd(reader) { collected.append(Data($0)) }
            collected.finish()
        }
    }

    /// SIGKILL: children can inherit a blocked SIGTERM from the test runner,
    /// and `openssl s_server` then ignores SIGTERM.
    func terminate() {
        child.kill()
    }

    var outputSoFar: String { collected.text }
    var isRunning: Bool { child.isRunning }

    var processIdentifier: Int32 { child.processIdentifier }

    /// Waits for the process to exit (terminating it after `timeout`).
    func finish(timeout: Double = 30) async -> (status: Int32, output: String) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        terminate()
        _ = await Loopback.waitUntil(seconds: 10) { !self.isRunning }
        _ = await Loopback.waitUntil(seconds: 5) { collected.isFinished }
        return (child.status ?? -1, collected.text)
    }

    /// Waits until the output contains `marker`; returns the output so far, or nil on timeout/exit.
    func waitForOutput(containing marker: String, timeout: Double = 10) async -> String? {
        let found = await Loopback.waitUntil(seconds: timeout) {
            collected.text.contains(marker) || !self.isRunning
        }
        let text = collected.text
        return found && text.contains(marker) ? text : nil
    }

    /// Runs `executable` to its end (killed after `timeout` seconds), feeding it `input`.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        input: [UInt8]? = nil, timeout: Double = 60
    ) async throws -> (status: Int32, output: [UInt8], errors: [UInt8]) {
        let child = try ChildProcess(
            executable, arguments: arguments, environment: environment, input: input.map { .bytes($0) } ?? .nothing
        )
        // Waited for on a thread of its own: blocking one of the concurrency
        // pool's few threads (two on a 2-core machine) stalls every other test.
        // Killed at `timeout`: a child that never ends cannot hold the test.
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let finished = child.finish(timeout: .milliseconds(Int(timeout * 1000)))
                continuation.resume(returning: (finished.status ?? -1, finished.output, finished.errors))
            }
        }
    }

    static var isPythonAvailable: Bool { which("python3") }
    static var isStunnelAvailable: Bool { which("stunnel4") || which("stunnel") }

    static func which(_ program: String) -> Bool {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(program)") }
    }
}

private final class OutputBuffer: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private var data = Data()
    private var done = false

    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    func finish() { lock.withLock { done = true } }
    var isFinished: Bool { lock.withLock { done } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
