import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// A child process (openssl, python3, stunnel) with stdout and stderr merged.
/// Tests `defer { process.terminate() }` so it never outlives a failing test.
///
/// Started with posix_spawn, not Foundation's `Process`: `Process.run()`
/// lists the parent's open descriptors into a buffer while other tests open
/// more, and with a thousand or so open (the whole suite at once) it wrote
/// past that buffer and crashed the test runner.
final class ExternalProcess: @unchecked Sendable {
    // @unchecked: `pid` is set once in init; the exit status is behind the lock.
    private let pid: pid_t
    private let collected = OutputBuffer()
    private let exit = NIOLockedValueBox<Int32?>(nil)

    enum StandardInput {
        /// End of file at once.
        case empty
        /// Open and silent until the process is killed.
        case silent
        /// This text, then end of file.
        case text(String)
    }

    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    init(_ arguments: [String], standardInput: StandardInput = .empty) throws {
        var output: [Int32] = [0, 0]
        var input: [Int32] = [0, 0]
        guard pipe(&output) == 0, pipe(&input) == 0 else {
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Not inherited by children spawned elsewhere (Swift's Glibc does not show pipe2).
        for descriptor in output + input { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if case .empty = standardInput {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        } else {
            posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, output[1], 2)
        // Nothing else of this process: a child must not keep other tests' sockets open.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        }
        let full = ["/usr/bin/env"] + arguments
        let argv = full.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, full[0], &actions, nil, argv, environ)
        close(output[1])
        close(input[0])
        guard spawned == 0 else {
            close(output[0])
            close(input[1])
            throw SpawnError(description: "cannot run \(arguments.first ?? ""): \(String(cString: strerror(spawned)))")
        }
        pid = child
        let spawnedChild = child
        switch standardInput {
        case .empty:
            close(input[1])
        case .text(let text):
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let count = bytes.withUnsafeBytes { Glibc.write(input[1], $0.baseAddress, $0.count) }
                if count > 0 { bytes = bytes.dropFirst(count) } else if count < 0 && errno == EINTR { continue } else { break }
            }
            close(input[1])
        case .silent:
            // Kept open (never written) for servers that would quit on end of input; closed once it exits.
            break
        }
        // Drain continuously so the child never blocks on a full pipe.
        let collected = self.collected
        let reader = output[0]
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count > 0 {
                    collected.append(Data(chunk[0..<count]))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(reader)
            collected.finish()
        }
        let exit = self.exit
        let keptInput: Int32? = { if case .silent = standardInput { return input[1] } else { return nil } }()
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(spawnedChild, &status, 0) == -1 && errno == EINTR {}
            keptInput.map { _ = close($0) }
            // As Process reported it: the exit code, or the signal that ended it.
            let code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
            exit.withLockedValue { $0 = code }
        }
    }

    /// SIGKILL: children can inherit a blocked SIGTERM from the test runner,
    /// and `openssl s_server` then ignores SIGTERM.
    func terminate() {
        if isRunning { kill(pid, SIGKILL) }
    }

    var outputSoFar: String { collected.text }
    var isRunning: Bool { exit.withLockedValue { $0 == nil } }

    var processIdentifier: Int32 { pid }

    /// Waits for the process to exit (terminating it after `timeout`).
    func finish(timeout: Double = 30) async -> (status: Int32, output: String) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        terminate()
        _ = await Loopback.waitUntil(seconds: 10) { !self.isRunning }
        _ = await Loopback.waitUntil(seconds: 5) { collected.isFinished }
        return (exit.withLockedValue { $0 } ?? -1, collected.text)
    }

    /// Waits until the output contains `marker`; returns the output so far, or nil on timeout/exit.
    func waitForOutput(containing marker: String, timeout: Double = 10) async -> String? {
        let found = await Loopback.waitUntil(seconds: timeout) {
            collected.text.contains(marker) || !self.isRunning
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
