import ArgumentParser
import Foundation
import Logging
import SimpleTunnelServices

/// `tunnel-server passwd LOGIN`: adds or replaces a user in the users file, or in the shared database.
struct Passwd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or replace a user in the users file, or with --database in the database several servers share (salted PBKDF2-SHA256).",
        discussion: "The password is read from the terminal without echo, or from standard input when that is not a terminal."
    )

    @Argument(help: "The login to add or replace.")
    var login: String

    @Option(help: "The users file; created (mode 0600) when missing.")
    var users = "users"

    @Option(help: "Write the login to this PostgreSQL database instead of a users file: postgres://USER@HOST:PORT/DATABASE.")
    var database: String?

    @Option(name: .customLong("database-password-file"), help: "File whose first line is the database password (mode 0600); else $PGPASSWORD.")
    var databasePasswordFile: String?

    @Option(help: "PBKDF2 iterations (at least 100000).")
    var iterations = PasswordHash.defaultIterations

    func validate() throws {
        guard UserDatabase.isValidLogin(login) else {
            throw ValidationError("login \"\(login)\" must be 1 to 64 characters without ':' or spaces")
        }
        guard iterations >= PasswordHash.minimumIterations else {
            throw ValidationError("--iterations \(iterations): at least \(PasswordHash.minimumIterations)")
        }
    }

    func run() async throws {
        let password = try PasswordReader.read(prompt: "Password for \(login): ")
        guard !password.isEmpty else { throw ValidationError("the password is empty") }
        let hash = try PasswordHash(password: password, iterations: iterations)
        if let database {
            try await save(hash, in: database)
            return
        }
        var file = UserDatabase()
        if FileManager.default.fileExists(atPath: users) {
            file = try UserDatabase.load(path: users)
        }
        file.set(login, hash: hash)
        try file.write(to: users)
        print("\(login) saved in \(users)")
    }

    /// Connects, brings the schema up to date (a first `passwd` may come before any server ran) and writes the login.
    private func save(_ hash: PasswordHash, in url: String) async throws {
        let location = try DatabaseLocation(parsing: url)
        let database = TunnelDatabase(
            location: location, password: try DatabasePassword.read(file: databasePasswordFile), logger: Logger(label: "tunnel-server"))
        let pool = Task { await database.run() }
        defer { pool.cancel() }
        try await database.prepare()
        try await DatabaseLogins(database: database).set(login, hash: hash)
        print("\(login) saved in \(location)")
    }
}

/// Reads a password: from the terminal with echo off, else one line of standard input.
enum PasswordReader {
    static func read(prompt: String) throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            return readLine(strippingNewline: true) ?? ""
        }
        FileHandle.standardError.write(Data(prompt.utf8))
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &original)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true) ?? ""
    }
}
