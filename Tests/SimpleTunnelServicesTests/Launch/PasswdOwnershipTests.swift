import Foundation
import Testing
@testable import SimpleTunnelServices

/// `tunnel-server passwd` run as root on the service's users file leaves it
/// the service's (owner, group and mode kept), refuses an --owner that is not
/// the file's, and asks for a password of 8 characters or more; a server that
/// cannot read the file says whose it is and who it runs as.
@Suite("passwd: the users file stays its owner's", .timeLimit(.minutes(2)))
struct PasswdOwnershipTests {
    static func run(_ arguments: [String], input: String = "") async throws -> (status: Int32, output: String) {
        let result = try await ExternalProcess.run(
            BuiltPrograms.tunnelServer, ["passwd"] + arguments + ["--iterations", "100000"], input: Array(input.utf8))
        return (result.status, String(decoding: result.output + result.errors, as: UTF8.self))
    }

    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "passwd-owner-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func attributes(_ path: String) -> (uid: uid_t, gid: gid_t, mode: mode_t) {
        var status = stat()
        stat(path, &status)
        return (status.st_uid, status.st_gid, status.st_mode & 0o7777)
    }

    @Test(.enabled(if: TestRequirements.met(geteuid() == 0, "root"), "needs root to give the file to another user"))
    func rootsRemoveAndAddKeepTheOwnerGroupAndMode() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let users = folder + "/users"
        var database = UserDatabase()
        for login in ["alice", "bob"] { database.set(login, hash: try PasswordHash(password: "wonderland", iterations: PasswordHash.minimumIterations)) }
        try database.write(to: users)
        // A group other than the owner's, and a mode other than 0600: both are the file's own.
        #expect(chown(users, 65534, 65533) == 0 && chmod(users, 0o400) == 0)

        let removed = try await Self.run(["bob", "--remove", "--users", users])
        #expect(removed.status == 0, "\(removed.output)")
        #expect(Self.attributes(users) == (65534, 65533, 0o400))
        #expect(try UserDatabase.load(path: users).users.keys.sorted() == ["alice"])
        #expect(!removed.output.contains("note:"), "the file is not root's: \(removed.output)")

        let added = try await Self.run(["carol", "--users", users], input: "correct horse\n")
        #expect(added.status == 0, "\(added.output)")
        #expect(Self.attributes(users) == (65534, 65533, 0o400))
        #expect(try UserDatabase.load(path: users).verify(login: "carol", password: "correct horse"))

        // --owner naming the file's owner is fine; naming another is refused, and nothing changes.
        let same = try await Self.run(["dave", "--users", users, "--owner", "nobody"], input: "correct horse\n")
        #expect(same.status == 0, "\(same.output)")
        let other = try await Self.run(["erin", "--users", users, "--owner", "root"], input: "correct horse\n")
        #expect(other.status != 0)
        #expect(other.output.contains("\(users) belongs to nobody (uid 65534), not to --owner root (uid 0)"), "\(other.output)")
        #expect(!other.output.contains("Usage:"), "\(other.output)")
        #expect(try UserDatabase.load(path: users).users["erin"] == nil)
        #expect(Self.attributes(users) == (65534, 65533, 0o400))
    }

    @Test func aPasswordHasEightCharactersUnlessAllowedShorter() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let users = folder + "/users"
        let short = try await Self.run(["frank", "--users", users], input: "seven77\n")
        #expect(short.status != 0)
        #expect(short.output.contains("the password has 7 characters, fewer than 8; choose a longer one (or give --allow-short)"), "\(short.output)")
        #expect(!short.output.contains("Usage:"), "\(short.output)")
        #expect(!FileManager.default.fileExists(atPath: users))

        let empty = try await Self.run(["frank", "--users", users], input: "\n")
        #expect(empty.status != 0)
        #expect(empty.output.trimmingCharacters(in: .whitespacesAndNewlines) == "Error: the password is empty; nothing was changed", "\(empty.output)")

        let allowed = try await Self.run(["frank", "--users", users, "--allow-short"], input: "seven77\n")
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(try UserDatabase.load(path: users).verify(login: "frank", password: "seven77"))
        let eight = try await Self.run(["grace", "--users", users], input: "eight888\n")
        #expect(eight.status == 0, "\(eight.output)")
    }

    @Test func anUnreadableUsersFileNamesItsOwnerAndTheServersUser() {
        let denial = UsersFileDenial(
            path: "/etc/simpletunnel/users", owner: .init(id: 0, name: "root"), mode: 0o600, reader: .init(id: 998, name: "simpletunnel"))
        #expect(
            denial.description == "cannot read /etc/simpletunnel/users: it is owned by root (mode 0600) and tunnel-server runs as"
                + " simpletunnel (uid 998); run `chown simpletunnel /etc/simpletunnel/users`")
        #expect(UserDatabaseError.notPermitted(denial).description == denial.description)
        let folder = UsersFileDenial(
            path: "/root/users", owner: .init(id: 0, name: "root"), mode: 0o700, reader: .init(id: 998, name: "simpletunnel"), folder: "/root")
        #expect(
            folder.description == "cannot read /root/users: tunnel-server runs as simpletunnel (uid 998), which may not enter /root"
                + " (owned by root, mode 0700); keep the file in a folder simpletunnel can enter, such as /etc/simpletunnel")
    }

    /// The reload's own path: the server's user (here nobody) may not read root's file.
    @Test(.enabled(if: TestRequirements.met(geteuid() == 0, "root"), "needs root to read as another user"))
    func aReloadAsTheServiceUserSaysWhoseTheFileIs() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        chmod(folder, 0o755)
        let users = folder + "/users"
        var database = UserDatabase()
        database.set("alice", hash: try PasswordHash(password: "wonderland", iterations: PasswordHash.minimumIterations))
        try database.write(to: users)
        // Read as nobody, as a server after --run-as: the same load a reload makes.
        let listed = try await ExternalProcess.run(
            "/usr/bin/setpriv", ["--reuid", "65534", "--regid", "65534", "--clear-groups", BuiltPrograms.forAnyUser.tunnelServer, "passwd", "--list", "--users", users])
        let output = String(decoding: listed.output + listed.errors, as: UTF8.self)
        #expect(listed.status != 0)
        #expect(output.contains("cannot read \(users): it is owned by root (mode 0600) and tunnel-server runs as nobody (uid 65534); run `chown nobody \(users)`"), "\(output)")
        #expect(!output.contains("permission"), "\(output)")
    }
}
