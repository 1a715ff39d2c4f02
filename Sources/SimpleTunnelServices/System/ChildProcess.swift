import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// A program started with `posix_spawn`, its output read through pipes.
///
/// Not Foundation's `Process`: its `run()` lists the parent's open descriptors
/// into a fixed buffer, and a server (or a test runner) holding a thousand or
/// so sockets made it write past that buffer and crash. Here the child closes
/// everything above standard error itself (`addclosefrom_np`), so it keeps no
/// tunnel socket open, whatever this process holds.
public final class ChildProcess: Sendable {
    public let processIdentifier: pid_t
    /// Read end of the child's standard output (and of its standard error when merged).
    public let standardOutput: Int32
    /// Read end of the child's standard error; nil when merged into standard output.
    public let standardError: Int32?
    private let exitStatus = NIOLockedValueBox<Int32?>(nil)
    private let exited = DispatchSemaphore(value: 0)

    public enum Input: Sendable {
        /// `/dev/null`: end of file at once.
        case nothing
        /// These bytes, then end of file.
        case bytes([UInt8])
        /// A pipe never written and closed only when the child exits, for
        /// servers that quit at the end of their input.
        case heldOpen
    }

    public struct SpawnError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Starts `executable` (a path; no search) with `arguments` (not including
    /// the program's own name). `environment` nil keeps this process's.
    /// `directory` is where the child starts.
    public init(
        _ executable: String, arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, input: Input = .nothing, mergingErrors: Bool = false
    ) throws(SpawnError) {
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1], inputPipe: [Int32] = [-1, -1]
        guard pipe(&output) == 0, mergingErrors || pipe(&errors) == 0, pipe(&inputPipe) == 0 else {
            let reason = String(cString: strerror(errno))
            for descriptor in output + errors + inputPipe where descriptor >= 0 { close(descriptor) }
            throw SpawnError(description: "cannot make a pipe for \(executable): \(reason)")
        }
        // Not inherited by programs spawned meanwhile on other threads.
        for descriptor in output + errors + inputPipe where descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if case .nothing = input {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        } else {
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, mergingErrors ? output[1] : errors[1], 2)
        if let closeFrom = SpawnExtensions.closeFrom { _ = closeFrom(&actions, 3) }
        if let directory, let changeDirectory = SpawnExtensions.changeDirectory {
            _ = directory.withCString { changeDirectory(&actions, $0) }
        }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environmentLines: [UnsafeMutablePointer<CChar>?]? = environment.map { variables in
            variables.map { name, value in strdup("\(name)=\(value)") } + [nil]
        }
        defer { environmentLines?.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = environmentLines.map { lines in
            posix_spawn(&child, executable, &actions, nil, argv, lines)
        } ?? posix_spawn(&child, executable, &actions, nil, argv, environ)

        close(output[1])
        if !mergingErrors { close(errors[1]) }
        close(inputPipe[0])
        guard spawned == 0 else {
            close(output[0])
            if !mergingErrors { close(errors[0]) }
            close(inputPipe[1])
            throw SpawnError(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        let spawnedChild = child
        processIdentifier = child
        standardOutput = output[0]
        standardError = mergingErrors ? nil : errors[0]

        let inputEnd = inputPipe[1]
        switch input {
        case .nothing:
            close(inputEnd)
        case .bytes(let bytes):
            // On a thread of its own: a large input must not wait for the output to be read.
            Thread.detachNewThread { Self.writeAll(bytes, to: inputEnd) }
        case .heldOpen:
            break
        }
        let heldInput: Int32? = if case .heldOpen = input { inputEnd } else { nil }
        let exitStatus = self.exitStatus, exited = self.exited
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(spawnedChild, &status, 0) == -1 && errno == EINTR {}
            heldInput.map { _ = close($0) }
            exitStatus.withLockedValue { $0 = Self.exitCode(status) }
            exited.signal()
        }
    }

    /// The exit code, or the number of the signal that ended it; nil while it runs.
    public var status: Int32? { exitStatus.withLockedValue { $0 } }
    public var isRunning: Bool { status == nil }

    /// Blocks until the child exits or `timeout` passes; true if it exited.
    public func waitForExit(timeout: Duration) -> Bool {
        if !isRunning { return true }
        let milliseconds = Int(timeout / .milliseconds(1))
        guard exited.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return false }
        exited.signal()  // Later waiters see it too.
        return true
    }

    /// SIGKILL: a child can inherit a blocked SIGTERM (from a test runner), and then ignore SIGTERM.
    public func kill() {
        if isRunning { _ = Glibc.kill(processIdentifier, SIGKILL) }
    }

    /// What a child printed, and how it ended.
    public struct Finished: Sendable {
        /// The exit code, or the signal's number; nil if it outlived even the kill.
        public var status: Int32?
        public var output: [UInt8]
        /// Empty when standard error was merged into `output`.
        public var errors: [UInt8]
        /// It ran past the timeout and was killed.
        public var timedOut: Bool
    }

    /// Drains both pipes on threads of their own (so the child never blocks on a
    /// full one) until it exits, killing it after `timeout`. A grandchild that
    /// keeps a pipe open is given two seconds, not waited for.
    public func finish(timeout: Duration) -> Finished {
        let collected = NIOLockedValueBox<[Bool: [UInt8]]>([:])
        let drained = DispatchGroup()
        for (descriptor, isError) in [(standardOutput, false), (standardError, true)] {
            guard let descriptor else { continue }
            drained.enter()
            Thread.detachNewThread {
                let bytes = Self.readToEnd(descriptor)
                collected.withLockedValue { $0[isError] = bytes }
                drained.leave()
            }
        }
        let exited = waitForExit(timeout: timeout)
        if !exited {
            kill()
            _ = waitForExit(timeout: .seconds(5))
        }
        _ = drained.wait(timeout: .now() + .seconds(2))
        return collected.withLockedValue {
            Finished(status: status, output: $0[false] ?? [], errors: $0[true] ?? [], timedOut: !exited)
        }
    }

    /// Everything until end of file, retrying reads a signal interrupts; closes `descriptor`.
    public static func readToEnd(_ descriptor: Int32, each: ([UInt8]) -> Void = { _ in }) -> [UInt8] {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                collected += chunk[0..<count]
                each(Array(chunk[0..<count]))
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                close(descriptor)
                return collected
            }
        }
    }

    /// As a shell reports it: the exit code, or the signal that ended the process.
    static func exitCode(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        // A child that exits unread makes the write fail (EPIPE) instead of killing this process.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var remaining = bytes[...]
        while !remaining.isEmpty {
            let count = remaining.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                remaining = remaining.dropFirst(count)
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break  // The child stopped reading; what it did not take is its business.
            }
        }
        close(descriptor)
    }
}

/// glibc's spawn actions that Swift's Glibc module does not show (2.29 and 2.34 on).
private enum SpawnExtensions {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let closeFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: CloseFrom.self)
    }
    static let changeDirectory: ChangeDirectory? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: ChangeDirectory.self)
    }
}
