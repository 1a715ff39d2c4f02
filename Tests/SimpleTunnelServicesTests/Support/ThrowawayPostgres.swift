import Foundation
import NIOConcurrencyHelpers
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// A real PostgreSQL (Debian's `postgresql`, whichever major version is installed) in a temporary folder,
/// listening on a Unix socket in that folder only (no TCP port, which another
/// test's restarting server might want), removed by `remove()`. `initdb` and `postgres` refuse
/// to run as root, so they run as the `postgres` user the package creates, in
/// a folder that user owns; the package's own cluster is never started. One
/// cluster is made per test process and copied for each test, since `initdb`
/// takes seconds.
final class ThrowawayPostgres: Sendable {
    /// The newest major version Debian installed (15 on Debian 12, 17 on Debian 13).
    static let binaries: String = {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        return "\(root)/\(versions.last.map(String.init) ?? "15")/bin"
    }()

    /// What the tests need: root (to become `postgres`), the package and its user.
    static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") && getpwnam("postgres") != nil
    }

    static let requirement = "root and Debian's postgresql (apt-get install postgresql)"

    let folder: String
    let port: Int

    var data: String { folder + "/data" }
    /// The server as `--database` names it: user postgres, trusted, through its socket (which processes in other
    /// network namespaces reach too); the port only names the socket file.
    var url: String { "postgres://postgres@localhost/postgres?host=\(folder)&port=\(port)" }
    var socketURL: String { url }
    var location: DatabaseLocation {
        get throws { try DatabaseLocation(parsing: url) }
    }

    private init(folder: String, port: Int) {
        self.folder = folder
        self.port = port
    }

    /// `start()` on a thread of its own: initdb and pg_ctl block for seconds, and the
    /// concurrency pool's few threads must keep running the servers under test meanwhile.
    static func started() async throws -> ThrowawayPostgres {
        try await offThePool { try start() }
    }

    func stopServerOffThePool(mode: String = "immediate") async throws { try await Self.offThePool { try self.stopServer(mode: mode) } }
    func startServerOffThePool() async throws { try await Self.offThePool { try self.startServer() } }

    static func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// A fresh cluster, started.
    static func start() throws -> ThrowawayPostgres {
        let template = try template.get()
        let folder = try makeFolder()
        try run(["cp", "-a", template, folder + "/data"], as: nil)
        let postgres = ThrowawayPostgres(folder: folder, port: 5432)
        try postgres.startServer()
        return postgres
    }

    /// Starts the server again after `stopServer()`, on the same port.
    func startServer() throws {
        try Self.run(
            [
                "\(Self.binaries)/pg_ctl", "-D", data, "-l", folder + "/log", "-w", "-t", "60",
                "-o", "-k \(folder) -c listen_addresses='' -p \(port) -c fsync=off -c max_connections=200", "start",
            ], as: "postgres")
    }

    /// Stops it at once (clients see their connections end, as when a database server goes away);
    /// `mode` "fast" as an operator's `pg_ctl stop -m fast` does (clients are told, SQLSTATE 57P01).
    func stopServer(mode: String = "immediate") throws {
        try Self.run(["\(Self.binaries)/pg_ctl", "-D", data, "-w", "-t", "60", "-m", mode, "stop"], as: "postgres")
    }

    func remove() {
        try? stopServer()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var log: String { (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? "" }

    private static let template = Result<String, Error> {
        let folder = try makeFolder()
        templateFolder.withLockedValue { $0 = folder }
        // Removed when the test process exits, passed or not.
        atexit {
            if let folder = ThrowawayPostgres.templateFolder.withLockedValue({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
        }
        try run(["\(binaries)/initdb", "-D", folder + "/data", "-A", "trust", "-U", "postgres", "--no-sync"], as: "postgres")
        return folder + "/data"
    }
    private static let templateFolder = NIOLockedValueBox<String?>(nil)

    /// A folder only `postgres` may enter, under the system's temporary folder.
    private static func makeFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("simpletunnel-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try run(["chown", "postgres:postgres", folder], as: nil)
        return folder
    }

    /// Runs a command to its end (as `user` through runuser) from "/", failing with its output.
    /// posix_spawn rather than Foundation's Process: the server `pg_ctl start` leaves behind would inherit
    /// the descriptor Process watches for its child's exit, and waitUntilExit would wait for the server.
    @discardableResult
    static func run(_ command: [String], as user: String?) throws -> String {
        let full = ["/bin/sh", "-c", "cd / && exec \"$@\"", "sh"] + (user.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + command
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("simpletunnel-pg-output-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process: the postgres server would keep the other tests' listening
        // sockets open for its whole life, and a test server stopped and started again on its port
        // then found it "already in use".
        // (glibc 2.34 has it; Swift's Glibc module does not show it.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        }
        let arguments = full.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, full[0], &actions, nil, arguments, environ)
        guard spawned == 0 else { throw ThrowawayPostgresError("cannot run \(command[0]): \(String(cString: strerror(spawned)))") }
        // Bounded: pg_ctl's own waits are 60 s; a program that hangs past two minutes is killed, and the test fails.
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid || (done == -1 && errno != EINTR) { break }
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                throw ThrowawayPostgresError("\(command.joined(separator: " ")) did not finish within 120 s")
            }
            usleep(10_000)
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw ThrowawayPostgresError("\(command.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }
}

struct ThrowawayPostgresError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
