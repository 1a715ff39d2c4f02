import Foundation
import NIOPosix
@testable import SimpleTunnelServices

/// A real PostgreSQL (Debian's `postgresql` 15) in a temporary folder, on a
/// free loopback port, removed by `remove()`. `initdb` and `postgres` refuse
/// to run as root, so they run as the `postgres` user the package creates, in
/// a folder that user owns; the package's own cluster is never started. One
/// cluster is made per test process and copied for each test, since `initdb`
/// takes seconds.
final class ThrowawayPostgres: Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"

    /// What the tests need: root (to become `postgres`), the package and its user.
    static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") && getpwnam("postgres") != nil
    }

    static let requirement = "root and Debian's postgresql 15 (apt-get install postgresql)"

    let folder: String
    let port: Int

    var data: String { folder + "/data" }
    /// The server as `--database` names it: user postgres, trusted on loopback.
    var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres" }
    /// The same server through its Unix socket, which processes in other network namespaces reach too.
    var socketURL: String { "postgres://postgres@localhost/postgres?host=\(folder)&port=\(port)" }
    var location: DatabaseLocation {
        get throws { try DatabaseLocation(parsing: url) }
    }

    private init(folder: String, port: Int) {
        self.folder = folder
        self.port = port
    }

    /// A fresh cluster, started.
    static func start() throws -> ThrowawayPostgres {
        let template = try template.get()
        let folder = try makeFolder()
        try run(["cp", "-a", template, folder + "/data"], as: nil)
        let postgres = ThrowawayPostgres(folder: folder, port: try freeLoopbackPort())
        try postgres.startServer()
        return postgres
    }

    /// Starts the server again after `stopServer()`, on the same port.
    func startServer() throws {
        try Self.run(
            [
                "\(Self.binaries)/pg_ctl", "-D", data, "-l", folder + "/log", "-w", "-t", "60",
                "-o", "-k \(folder) -c listen_addresses=127.0.0.1 -p \(port) -c fsync=off -c max_connections=200", "start",
            ], as: "postgres")
    }

    /// Stops it at once (clients see their connections end, as when a database server goes away).
    func stopServer() throws {
        try Self.run(["\(Self.binaries)/pg_ctl", "-D", data, "-w", "-t", "60", "-m", "immediate", "stop"], as: "postgres")
    }

    func remove() {
        try? stopServer()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var log: String { (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? "" }

    private static let template = Result<String, Error> {
        let folder = try makeFolder()
        try run(["\(binaries)/initdb", "-D", folder + "/data", "-A", "trust", "-U", "postgres", "--no-sync"], as: "postgres")
        return folder + "/data"
    }

    /// A folder only `postgres` may enter, under the system's temporary folder.
    private static func makeFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("simpletunnel-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try run(["chown", "postgres:postgres", folder], as: nil)
        return folder
    }

    private static func freeLoopbackPort() throws -> Int {
        let socket = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        defer { try? socket.close().wait() }
        guard let port = socket.localAddress?.port else { throw ThrowawayPostgresError("no free loopback port") }
        return port
    }

    /// Runs a command to its end (as `user` through runuser), failing with its output.
    @discardableResult
    static func run(_ command: [String], as user: String?) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: user == nil ? "/usr/bin/env" : "/usr/sbin/runuser")
        process.arguments = user.map { ["-u", $0, "--"] + command } ?? command
        // The postgres user may not enter the test's working directory.
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ThrowawayPostgresError("\(command.joined(separator: " ")) failed (\(process.terminationStatus)): \(text)")
        }
        return text
    }
}

struct ThrowawayPostgresError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
