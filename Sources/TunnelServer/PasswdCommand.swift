import ArgumentParser
import Foundation
import Logging
import SimpleTunnelDatabase
import SimpleTunnelServices

/// `tunnel-server passwd LOGIN`: adds or replaces a user in the users file, or in the shared database; `--list`, `--remove`.
struct Passwd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or replace a user in the users file, or with --database in the database several servers share (salted PBKDF2-SHA256); list the file's users, or remove one.",
        discussion: """
            The password is read from the terminal without echo, or from standard input when that is not a terminal. \
            The file and a folder created for it are private (0600, 0700); --owner gives them to the user the server \
            runs as (the example systemd unit's User=simpletunnel), which must be able to read the file. An existing \
            file keeps its owner, group and mode when rewritten. A password has at least 8 characters (--allow-short).
            """
    )

    @Argument(help: "The login to add or replace (or remove, with --remove).")
    var login: String?

    @Option(help: "The users file the server's --users names (such as /etc/simpletunnel/users); created (mode 0600, its folder 0700) when missing. Required without --database.")
    var users: String?

    @Option(help: "Write the login to this PostgreSQL database instead of a users file: postgres://USER@HOST:PORT/DATABASE.")
    var database: String?

    @Option(name: .customLong("database-password-file"), help: "File whose first line is the database password (mode 0600); else $PGPASSWORD.")
    var databasePasswordFile: String?

    @Option(help: "PBKDF2 iterations (at least 100000).")
    var iterations = PasswordHash.defaultIterations

    @Flag(help: "List the logins in the users file.")
    var list = false

    @Flag(help: "Remove LOGIN from the users file (or the database, where every server ends LOGIN's tunnels at once).")
    var remove = false

    @Option(help: "Make a new file (and a folder created for it) belong to this user, who runs the server (start as root); an existing file must already be theirs.")
    var owner: String?

    @Flag(help: "Accept a password shorter than 8 characters.")
    var allowShort = false

    func validate() throws {
        if database == nil, users == nil {
            throw ValidationError("give --users FILE, the file the server's --users names (such as /etc/simpletunnel/users), or --database URL")
        }
        if list {
            guard login == nil, !remove else { throw ValidationError("--list takes no login and no --remove") }
            return
        }
        guard let login else { throw ValidationError("give the login to add (or to --remove), or --list") }
        guard UserDatabase.isValidLogin(login) else {
            throw ValidationError("login \(PeerText.quoted(login, limit: 64)) must be 1 to 64 characters without ':', spaces or control characters")
        }
        guard iterations >= PasswordHash.minimumIterations else {
            throw ValidationError("--iterations \(iterations): at least \(PasswordHash.minimumIterations)")
        }
        if let owner {
            do { _ = try Privileges.account(named: owner) } catch { throw ValidationError("--owner \(owner): \(error)") }
        }
    }

    func run() async throws {
        if let database {
            guard owner == nil else {
                throw ValidationError("--owner is for a users file: with --database the logins are in the database")
            }
            if list { return try await withDatabase(database) { for login in try await $0.all() { print(login) } } }
            guard let login else { return }
            if remove {
                return try await withDatabase(database) { logins in
                    guard try await logins.remove(login) else { throw ValidationError("\(login) is not in the database") }
                    print("\(login) removed from the database; every server sharing it ends \(login)'s tunnels")
                }
            }
            let password = try PasswordReader.readNew(for: login, allowShort: allowShort)
            let hash = try PasswordHash(password: password, iterations: iterations)
            return try await withDatabase(database) { logins in
                try await logins.set(login, hash: hash)
                print("\(login) saved in \(logins.database.location)")
            }
        }
        guard let users else { return }
        let exists = FileManager.default.fileExists(atPath: users)
        guard exists || !(list || remove) else {
            throw ValidationError("\(users) does not exist: no users to \(list ? "list" : "remove from"); add one with `tunnel-server passwd LOGIN --users \(users)`")
        }
        let account = try owner.map { name throws(PrivilegeError) in try Privileges.account(named: name) }
        var existing = stat()
        if !list, let account, stat(users, &existing) == 0, let refusal = PasswdRefusal.ownerMismatch(users, fileOwner: existing.st_uid, owner: account) {
            throw refusal
        }
        var database = exists ? try UserDatabase.load(path: users) : UserDatabase()
        if list {
            for login in database.users.keys.sorted() { print(login) }
            return
        }
        guard let login else { return }
        if remove {
            guard database.remove(login) else { throw ValidationError("\(login) is not in \(users)") }
            try database.write(to: users)
            print("\(login) removed from \(users)")
            noteRootOwned(users)
            return
        }
        let folder = try UsersFileFolder.ensure(for: users, owner: account)
        let password = try PasswordReader.readNew(for: login, allowShort: allowShort)
        let replaced = database.users[login] != nil
        database.set(login, hash: try PasswordHash(password: password, iterations: iterations))
        try database.write(to: users)
        if let account, !exists {
            guard chown(users, account.uid, account.gid) == 0 else {
                throw ValidationError("cannot give \(users) to \(account.name): \(String(cString: strerror(errno)))")
            }
        }
        print("\(replaced ? "password changed for" : "added") \(login) in \(users)\(folder.map { " (created \($0), mode 0700)" } ?? "")")
        noteRootOwned(users)
    }

    /// Root's file is unreadable to a server that runs as its own user: say so while it can still be fixed.
    private func noteRootOwned(_ users: String) {
        var status = stat()
        guard getuid() == 0, stat(users, &status) == 0, status.st_uid == 0 else { return }
        print("note: \(users) belongs to root (mode 0\(String(status.st_mode & 0o777, radix: 8))); a server running as another user cannot read it:"
            + " `chown USER \(users)` (or add --owner USER when creating it)")
    }

    /// Connects, brings the schema up to date (a first `passwd` may come before any server ran), then does `body`.
    private func withDatabase(_ url: String, _ body: (DatabaseLogins) async throws -> Void) async throws {
        let location = try DatabaseLocation(parsing: url)
        let database = TunnelDatabase(
            location: location, password: try DatabasePassword.read(file: databasePasswordFile), logger: Logger(label: "tunnel-server"))
        let pool = Task { await database.run() }
        defer { pool.cancel() }
        try await database.prepare()
        try await body(DatabaseLogins(database: database))
    }
}

/// The users file's folder: created (0700, owned by `owner`) when missing, as `ssh-keygen` does for ~/.ssh.
enum UsersFileFolder {
    /// The folder created, or nil if it was there.
    static func ensure(for path: String, owner: Privileges.Account?) throws -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) else { return nil }
        do {
            // Folders above it as usual (0755 under the umask), so that the server's user can reach it; the folder itself private.
            let parent = (folder as NSString).deletingLastPathComponent
            if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ValidationError("cannot create the folder \(folder) for \(path): \(error.localizedDescription)")
        }
        if let owner, chown(folder, owner.uid, owner.gid) != 0 {
            throw ValidationError("cannot give \(folder) to \(owner.name): \(String(cString: strerror(errno)))")
        }
        return folder
    }
}

/// Reads a password: from the terminal with echo off, else one line of standard input.
enum PasswordReader {
    /// A new password: on a terminal it is asked twice and the two must match,
    /// as passwd(1) does; from a pipe, one line.
    static func readNew(for login: String, allowShort: Bool) throws -> String {
        let password = try read(prompt: "Password for \(login): ")
        if let weakness = PasswdRefusal.weakness(of: password, allowShort: allowShort) { throw weakness }
        guard isatty(STDIN_FILENO) == 1 else { return password }
        guard try read(prompt: "Again, to check: ") == password else {
            throw PasswdRefusal(description: "the two passwords differ; nothing was changed")
        }
        return password
    }

    static func read(prompt: String) throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            return readLine(strippingNewline: true) ?? ""
        }
        StandardError.write(prompt)
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &original)
            StandardError.write("\n")
        }
        return readLine(strippingNewline: true) ?? ""
    }
}
