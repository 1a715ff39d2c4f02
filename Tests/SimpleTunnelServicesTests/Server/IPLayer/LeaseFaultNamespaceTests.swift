import Foundation
import Testing
@testable import SimpleTunnelServices

/// A built server with an IP layer alone in a namespace, logins user0… in its
/// users file, and `Benchmarks/faults_helper.py churn` as its clients (raw
/// tunnels that log in, lease and leave, inside the same namespace).
final class LeaseFaultLab {
    let lab = NetworkNamespaceLab()
    let namespace: String
    let directory: String
    let pki: TestPKI
    static let password = "churn-password"
    static let helper = RepositoryPaths.root.appendingPathComponent("Benchmarks/faults_helper.py").path

    init(logins: Int) async throws {
        pki = try TestPKI()
        directory = NSTemporaryDirectory() + "lease-faults-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        namespace = try lab.makeNamespace()
        let users = try await ExternalProcess.run(
            "/usr/bin/env", ["python3", Self.helper, "users", "--logins", "\(logins)", "--password", Self.password])
        try #require(users.status == 0, "\(String(decoding: users.errors, as: UTF8.self))")
        try Data(users.output).write(to: URL(fileURLWithPath: directory + "/users"))
        chmod(directory + "/users", 0o600)
        let configuration = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>IPv4</key><dict><key>Pool</key><dict>
            <key>StartAddress</key><string>10.90.0.2</string><key>EndAddress</key><string>10.90.3.254</string>
            </dict></dict></dict></plist>
            """
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/server.plist"))
    }

    func cleanup() {
        lab.cleanup()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The server's command line, its leases in `state`.
    func serverCommand(state: String, program: String = BuiltPrograms.tunnelServer, arguments: [String] = []) -> [String] {
        [
            program, "--host", "127.0.0.1", "--port", "4433", "--config", directory + "/server.plist",
            "--cert", pki.certificatePath("server"), "--key", pki.keyPath("server"), "--users", directory + "/users",
            "--tun", "stun0", "--log-level", "info", "--state-directory", state, "--control", directory + "/server.sock",
        ] + arguments
    }

    /// Started, with its IP layer up and listening.
    func startServer(state: String) async throws -> ExternalProcess {
        let process = try lab.start(in: namespace, serverCommand(state: state))
        let listening = await process.waitForOutput(containing: "listening on 127.0.0.1:4433", timeout: 30)
        try #require(listening != nil, "the server did not start:\n\(process.outputSoFar)")
        return process
    }

    struct Churn: Decodable {
        var leases: Int
        var kept: Int
        var endedByServer: Int
        var refused: [String: Int]
        var conflicts: [String]
        var changed: [String]
        var last: [String: String]

        enum CodingKeys: String, CodingKey {
            case leases, kept, refused, conflicts, changed, last
            case endedByServer = "ended-by-server"
        }
    }

    /// Logins userFIRST… leasing and leaving for `seconds`.
    func churn(logins: Int, first: Int = 0, seconds: Double, holdMax: Double, stopFile: String? = nil) throws -> ExternalProcess {
        try lab.start(in: namespace, [
            "python3", Self.helper, "churn", "--port", "4433", "--logins", "\(logins)", "--first", "\(first)",
            "--password", Self.password, "--seconds", "\(seconds)", "--hold-max", "\(holdMax)",
        ] + (stopFile.map { ["--stop-file", $0] } ?? []))
    }

    static func outcome(of churn: ExternalProcess, seconds: Double) async throws -> Churn {
        let (status, output) = await churn.finish(timeout: seconds + 30)
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }
        try #require(status == 0 && line != nil, "the churn helper failed (\(status)):\n\(output)")
        return try JSONDecoder().decode(Churn.self, from: Data((line ?? "").utf8))
    }

    /// The lease file's IPv4 leases, by client.
    static func leases(in path: String) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        return try #require((object as? [String: Any])?["leases"] as? [String: String], "\(path) holds no leases")
    }
}

@Suite("Lease faults on the built server: a state folder that cannot be written, full or read-only, SIGKILL mid-churn", .serialized, .timeLimit(.minutes(3)))
struct LeaseFaultNamespaceTests {
    /// A small tmpfs mounted for the test; `unmount()` in a defer.
    struct SmallFileSystem {
        let path: String
        init(at path: String, size: String) throws {
            self.path = path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try Self.mount(["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path])
        }
        func remount(readOnly: Bool) throws { try Self.mount(["-o", readOnly ? "remount,ro" : "remount,rw", path]) }
        func unmount() { _ = try? SystemCommandRunner().run(["umount", "-l", path], timeout: .seconds(10)) }
        private static func mount(_ arguments: [String]) throws {
            let result = try SystemCommandRunner().run(["mount"] + arguments, timeout: .seconds(10))
            try #require(result.status == 0, "mount \(arguments): \(result.standardOutput)")
        }
        /// Writes until the file system is full.
        func fill() -> String {
            let filler = path + "/filler"
            let descriptor = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            let chunk = [UInt8](repeating: 0x66, count: 4096)
            while descriptor >= 0, chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
            close(descriptor)
            return filler
        }
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"))
    func aStateFolderThatCannotBeWrittenStopsTheStartNamingItAndTheUser() async throws {
        let faults = try await LeaseFaultLab(logins: 1)
        defer { faults.cleanup() }
        let readOnly = try SmallFileSystem(at: faults.directory + "/read-only", size: "64k")
        defer { readOnly.unmount() }
        try readOnly.remount(readOnly: true)
        let asRoot = try faults.lab.start(in: faults.namespace, faults.serverCommand(state: readOnly.path + "/state"))
        let (status, output) = await asRoot.finish(timeout: 30)
        #expect(status != 0, "\(output)")
        #expect(output.contains("the state folder \(readOnly.path)/state cannot be written by root (uid 0)"), "\(output)")
        #expect(output.contains("Read-only file system") && output.contains("remount it read-write"), "\(output)")
        #expect(!output.contains("listening on 127.0.0.1:4433"), "\(output)")

        // After --run-as, as the user it serves as: a folder root owns is refused by that user's name.
        let rootOwned = faults.directory + "/root-owned"
        try FileManager.default.createDirectory(atPath: rootOwned, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(faults.directory, 0o755)
        let asNobody = try faults.lab.start(in: faults.namespace, faults.serverCommand(
            state: rootOwned, program: BuiltPrograms.forAnyUser.tunnelServer, arguments: ["--run-as", "nobody"]))
        let (nobodyStatus, nobodyOutput) = await asNobody.finish(timeout: 30)
        #expect(nobodyStatus != 0, "\(nobodyOutput)")
        #expect(nobodyOutput.contains("the state folder \(rootOwned) cannot be written by nobody (uid 65534)"), "\(nobodyOutput)")
        #expect(nobodyOutput.contains("Permission denied"), "\(nobodyOutput)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"))
    func aFullThenReadOnlyStateFolderKeepsServingAndTheLastGoodFileAndSaysWhenSavesWorkAgain() async throws {
        let faults = try await LeaseFaultLab(logins: 12)
        defer { faults.cleanup() }
        let state = try SmallFileSystem(at: faults.directory + "/state", size: "64k")
        defer { state.unmount() }
        let leaseFile = state.path + "/leases.json"
        let server = try await faults.startServer(state: state.path)
        func churn(_ first: Int, _ count: Int) async throws -> LeaseFaultLab.Churn {
            let outcome = try await LeaseFaultLab.outcome(of: try faults.churn(logins: count, first: first, seconds: 1.5, holdMax: 0.3), seconds: 1.5)
            #expect(outcome.last.count == count && outcome.refused.isEmpty, "every login got a lease: \(outcome)\n\(server.outputSoFar)")
            return outcome
        }
        let errorLine = "cannot save leases to \(leaseFile)"

        // The usage file is written when the server hands its counts over; `usage` makes it do so now.
        let usageFile = state.path + "/usage.json"
        func usage() async throws -> Set<String> {
            let run = try await ExternalProcess.run(BuiltPrograms.tunnelServer, ["usage", "--json", "--control", faults.directory + "/server.sock"], timeout: 30)
            let report = try JSONDecoder().decode(LoginUsageReport.self, from: Data(run.output))
            return Set(report.logins.map(\.login))
        }
        func loginsInUsageFile() throws -> Set<String> {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: usageFile)))
            return Set(((object as? [String: Any])?["logins"] as? [String: Any])?.keys.map { $0 } ?? [])
        }
        let usageError = "usage could not be kept: cannot save usage to \(usageFile)"

        _ = try await churn(0, 4)
        let good = try String(contentsOfFile: leaseFile, encoding: .utf8)
        #expect(try LeaseFaultLab.leases(in: leaseFile).count == 4)
        #expect(try await usage() == Set((0..<4).map { "user\($0)" }))
        let goodUsage = try String(contentsOfFile: usageFile, encoding: .utf8)

        // Full: new logins are served from memory; the files stay as they were, whole.
        let filler = state.fill()
        _ = try await churn(4, 4)
        _ = try await usage()
        #expect(try String(contentsOfFile: leaseFile, encoding: .utf8) == good, "the last good file stays")
        #expect(try String(contentsOfFile: usageFile, encoding: .utf8) == goodUsage, "the last good usage file stays")
        let lines = server.outputSoFar.split(separator: "\n").filter { $0.contains(errorLine) }
        #expect(lines.count == 1 && lines.first?.contains("No space left on device") == true, "one line naming the path and the error: \(lines)")
        let usageLines = server.outputSoFar.split(separator: "\n").filter { $0.contains(usageError) }
        #expect(usageLines.count == 1 && usageLines.first?.contains("No space left on device") == true, "\(usageLines)")
        #expect(server.isRunning)

        // Space returns: the next save works, says so, and holds everyone, the logins served from memory too.
        try FileManager.default.removeItem(atPath: filler)
        _ = try await churn(8, 2)
        #expect(server.outputSoFar.contains("leases saved again"), "\(server.outputSoFar)")
        #expect(Set(try LeaseFaultLab.leases(in: leaseFile).keys) == Set((0..<10).map { "login:user\($0)" }))
        #expect(try await usage() == Set((0..<10).map { "user\($0)" }))
        #expect(server.outputSoFar.contains("usage is kept again"), "\(server.outputSoFar)")
        #expect(try loginsInUsageFile() == Set((0..<10).map { "user\($0)" }), "what waited in memory is in the file now")
        let saved = try String(contentsOfFile: leaseFile, encoding: .utf8)

        // Read-only: served from memory again, the file untouched, and no second line within the minute.
        try state.remount(readOnly: true)
        defer { try? state.remount(readOnly: false) }
        _ = try await churn(10, 2)
        #expect(try String(contentsOfFile: leaseFile, encoding: .utf8) == saved)
        #expect(server.outputSoFar.split(separator: "\n").filter { $0.contains(errorLine) }.count == 1, "\(server.outputSoFar)")
        #expect(server.isRunning)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "no half-written replacement stays: \(leftovers)")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, ip netns and python3"))
    func aServerKilledDuringLeaseChurnLoadsItsFileAndNeverGivesAnAddressToTwoLogins() async throws {
        // Each login costs a password check (about 0.1 s here), so a few dozen logins keep the server busy.
        let logins = 30, kills = 3, seconds = 90.0
        let faults = try await LeaseFaultLab(logins: logins)
        defer { faults.cleanup() }
        let state = faults.directory + "/state"
        var server = try await faults.startServer(state: state)
        let stopFile = faults.directory + "/stop-churn"
        let churn = try faults.churn(logins: logins, seconds: seconds, holdMax: 1.5, stopFile: stopFile)
        // Each server is killed once it has leased to a few logins, however busy the machine: the kills land mid-churn.
        func leasedAFew() async -> Bool {
            await Loopback.waitUntil(seconds: 30) { server.outputSoFar.components(separatedBy: " leased 10.90.").count > 6 }
        }
        var remembered: [Int] = []
        for _ in 0..<kills {
            #expect(await leasedAFew(), "no leases:\n\(server.outputSoFar)")
            kill(server.processIdentifier, SIGKILL)
            _ = await server.finish(timeout: 10)
            server = try await faults.startServer(state: state)
            let line = server.outputSoFar.split(separator: "\n").first { $0.contains("IP layer on") } ?? ""
            remembered.append(line.firstMatch(of: /(\d+) remembered/).flatMap { Int($0.1) } ?? -1)
        }
        #expect(await leasedAFew(), "no leases after the last restart:\n\(server.outputSoFar)")
        _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
        let outcome = try await LeaseFaultLab.outcome(of: churn, seconds: seconds)
        #expect(outcome.conflicts.isEmpty, "an address held by two logins: \(outcome.conflicts)")
        #expect(outcome.changed.isEmpty, "a login that came back got another address: \(outcome.changed)")
        #expect(outcome.endedByServer > 0 && outcome.kept > 0, "the kills hit held tunnels, and logins came back: \(outcome)")
        #expect(remembered.allSatisfy { $0 > 0 }, "each restart loads its file: \(remembered)")
        let file = try LeaseFaultLab.leases(in: state + "/leases.json")
        #expect(Set(file.values).count == file.count, "one address per login in the file: \(file)")
        for (login, address) in outcome.last {
            #expect(file["login:\(login)"] == address, "\(login) was last told \(address), the file says \(file["login:\(login)"] ?? "nothing")")
        }
    }
}
