import Foundation

/// The server's users file (`--users FILE`): one `login:hash` line per user,
/// `#` comments and blank lines allowed. Written atomically with mode 0600.
public struct UserDatabase: Sendable, Hashable {
    public private(set) var users: [String: PasswordHash] {
        didSet { maximumIterations = Self.maximumIterations(of: users) }
    }
    /// What every check costs (see `verify`): the slowest user's iterations.
    public private(set) var maximumIterations: Int

    public init(users: [String: PasswordHash] = [:]) {
        self.users = users
        self.maximumIterations = Self.maximumIterations(of: users)
    }

    public init(parsing text: String, path: String = "users file") throws(UserDatabaseError) {
        var users: [String: PasswordHash] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw .malformedLine(path: path, line: index + 1, reason: "expected LOGIN:HASH")
            }
            let login = String(line[..<colon])
            guard Self.isValidLogin(login) else {
                throw .malformedLine(path: path, line: index + 1, reason: "login \(PeerText.quoted(login, limit: 64)) must be 1 to 64 characters without ':', spaces or control characters")
            }
            do {
                users[login] = try PasswordHash(parsing: line[line.index(after: colon)...])
            } catch {
                throw .malformedLine(path: path, line: index + 1, reason: error.description)
            }
        }
        self.init(users: users)
    }

    public static func load(path: String) throws(UserDatabaseError) -> UserDatabase {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, reason: error.localizedDescription)
        }
        return try UserDatabase(parsing: text, path: path)
    }

    /// The one rule for logins, shared with the wire (`TunnelLoginSyntax`).
    public static func isValidLogin(_ login: String) -> Bool {
        TunnelLoginSyntax.isValid(login)
    }

    /// Adds or replaces a user.
    public mutating func set(_ login: String, hash: PasswordHash) {
        users[login] = hash
    }

    /// Removes a user; false if there was none by that login.
    public mutating func remove(_ login: String) -> Bool {
        users.removeValue(forKey: login) != nil
    }

    /// Whether `password` is `login`'s. Every check costs `maximumIterations`,
    /// whichever login it names and whether it exists, so that timing does
    /// not tell which logins exist: an unknown login is hashed against a
    /// decoy, and a user with fewer iterations is topped up with one.
    public func verify(login: String, password: String) -> Bool {
        let matches = users[login]?.matches(password) ?? false
        let spent = users[login]?.iterations ?? 0
        if spent < maximumIterations {
            _ = Self.decoy(iterations: maximumIterations - spent).matches(password)
        }
        return matches
    }

    private static func decoy(iterations: Int) -> PasswordHash {
        PasswordHash(iterations: iterations, salt: [UInt8](repeating: 0, count: 16), hash: [UInt8](repeating: 0, count: 32))
    }

    private static func maximumIterations(of users: [String: PasswordHash]) -> Int {
        users.values.map(\.iterations).max() ?? PasswordHash.defaultIterations
    }

    public var fileText: String {
        "# SimpleTunnel users: LOGIN:HASH, written by `tunnel-server passwd`.\n"
            + users.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)\n" }.joined()
    }

    /// Writes the file whole, then renames it into place, readable by its owner only.
    public func write(to path: String) throws(UserDatabaseError) {
        do {
            try AtomicFile.write(Array(fileText.utf8), to: path, permissions: 0o600)
        } catch {
            throw .unwritable(path: path, reason: error.description)
        }
    }
}

public enum UserDatabaseError: Error, Hashable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case unwritable(path: String, reason: String)
    case malformedLine(path: String, line: Int, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read the users file \(path): \(reason)"
        case .unwritable(let path, let reason): return "cannot write the users file \(path): \(reason)"
        case .malformedLine(let path, let line, let reason): return "\(path), line \(line): \(reason)"
        }
    }
}
