import Foundation

/// A child process (openssl, python3, stunnel) with stdout and stderr merged.
/// Tests `defer { process.terminate() }` so it never outlives a failing test.
final class ExternalProcess: @unchecked Sendable {
    // @unchecked: Process is only started in init, then terminated or waited on.
    private let process = Process()
    private let output = Pipe()
    private let collected = OutputBuffer()
    /// Kept open (never written) for servers that would quit on end of input.
    private let input = Pipe()

    enum StandardInput {
        /// End of file at once.
        case empty
        /// Open and silent until the process is killed.
        case silent
        /// This text, then end of file.
        case text(String)
    }

    init(_ arguments: [String], standardInput: StandardInput = .empty) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        switch standardInput {
        case .empty: process.standardInput = FileHandle.nullDevice
        case .silent, .text: process.standardInput = input
        }
        try process.run()
        if case .text(let text) = standardInput {
            input.fileHandleForWriting.write(Data(text.utf8))
            try input.fileHandleForWriting.close()
        }
        // Drain continuously so the child never blocks on a full pipe.
        let collected = self.collected
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                collected.append(data)
            }
            collected.finish()
        }
    }

    /// SIGKILL: children can inherit a blocked SIGTERM from the test runner,
    /// and `openssl s_server` then ignores `Process.terminate()`.
    func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    var outputSoFar: String { collected.text }
    var isRunning: Bool { process.isRunning }

    var processIdentifier: Int32 { process.processIdentifier }

    /// Waits for the process to exit (terminating it after `timeout`).
    func finish(timeout: Double = 30) async -> (status: Int32, output: String) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        terminate()
        process.waitUntilExit()
        _ = await Loopback.waitUntil(seconds: 5) { collected.isFinished }
        return (process.terminationStatus, collected.text)
    }

    /// Waits until the output contains `marker`; returns the output so far, or nil on timeout/exit.
    func waitForOutput(containing marker: String, timeout: Double = 10) async -> String? {
        let found = await Loopback.waitUntil(seconds: timeout) {
            collected.text.contains(marker) || !process.isRunning
        }
        let text = collected.text
        return found && text.contains(marker) ? text : nil
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
