import ArgumentParser
import Foundation
import SimpleTunnelServices

/// `tunnel-server passwd LOGIN`: adds or replaces a user in the users file.
struct Passwd: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or replace a user in the users file (salted PBKDF2-SHA256).",
        discussion: "The password is read from the terminal without echo, or from standard input when that is not a terminal."
    )

    @Argument(help: "The login to add or replace.")
    var login: String

    @Option(help: "The users file; created (mode 0600) when missing.")
    var users = "users"

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

    func run() throws {
        var database = UserDatabase()
        if FileManager.default.fileExists(atPath: users) {
            database = try UserDatabase.load(path: users)
        }
        let password = try PasswordReader.read(prompt: "Password for \(login): ")
        guard !password.isEmpty else { throw ValidationError("the password is empty") }
        database.set(login, hash: try PasswordHash(password: password, iterations: iterations))
        try database.write(to: users)
        print("\(login) saved in \(users)")
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
