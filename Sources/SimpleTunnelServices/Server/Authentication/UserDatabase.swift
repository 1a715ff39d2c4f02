import Foundation

/// The server's users file (`--users FILE`): one `login:hash` line per user,
/// `#` comments and blank lines allowed. Written atomically with mode 0600;
/// refused when group or others may read it. Also the few records a
/// `LoginDirectory` hands over for one check.
public struct UserDatabase: Sendable, Hashable {
    public private(set) var users: [String: PasswordHash] {
        didSet { maximumIterations = Self.checkIterations(of: users, atLeast: checkCost) }
    }
    /// What every check costs (see `verify`): the slowest record's iterations,
    /// or `checkCost` when that is more.
    public private(set) var maximumIterations: Int
    /// The directory's highest iteration count when these are only some of its
    /// records (one login's, from the database): a check costs at least that.
    public let checkCost: Int?

    public init(users: [String: PasswordHash] = [:], checkCost: Int? = nil) {
        self.users = users
        self.checkCost = checkCost
        self.maximumIterations = Self.checkIterations(of: users, atLeast: checkCost)
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
        if let exposure = PrivateFile.exposure(of: path, what: "UNPROTECTED USERS FILE") {
            throw .unprotected(exposure)
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            // Foundation's "You don't have permission" names no one: say whose file it is and who asked.
            if let denied = UsersFileDenial(path: path) { throw .notPermitted(denied) }
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
        verify(login: login, password: password) { record, password in record.matches(password) }
    }

    /// `verify` with the hash given: tests count the iterations each check asks for.
    func verify(login: String, password: String, hashing matches: (PasswordHash, String) -> Bool) -> Bool {
        let record = users[login]
        let matched = record.map { matches($0, password) } ?? false
        let spent = record?.iterations ?? 0
        if spent < maximumIterations {
            _ = matches(Self.decoy(iterations: maximumIterations - spent), password)
        }
        return matched
    }

    private static func decoy(iterations: Int) -> PasswordHash {
        PasswordHash(iterations: iterations, salt: [UInt8](repeating: 0, count: 16), hash: [UInt8](repeating: 0, count: 32))
    }

    /// With no record and no cost given, an unknown login costs what `passwd` writes.
    private static func checkIterations(of users: [String: PasswordHash], atLeast cost: Int?) -> Int {
        let slowest = max(users.values.map(\.iterations).max() ?? 0, cost ?? 0)
        return slowest > 0 ? slowest : PasswordHash.defaultIterations
    }

    public var fileText: String {
        "# SimpleTunnel users: LOGIN:HASH, written by `tunnel-server passwd`.\n"
            + users.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)\n" }.joined()
    }

    /// Writes the file whole, then renames it into place: a new file readable
    /// by its owner only, an existing one keeping its owner, group and mode
    /// (root's `passwd` must leave the service's file readable by the service).
    public func write(to path: String) throws(UserDatabaseError) {
        do {
            try AtomicFile.write(Array(fileText.utf8), to: path, permissions: 0o600, keepingExisting: true)
        } catch {
            throw .unwritable(path: path, reason: error.description)
        }
    }
}

public enum UserDatabaseError: Error, Hashable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case unwritable(path: String, reason: String)
    case malformedLine(path: String, line: Int, reason: String)
    /// Group or others may read it: the message says how to fix it.
    case unprotected(String)
    /// This process's user may not read it.
    case notPermitted(UsersFileDenial)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read the users file \(path): \(reason)"
        case .unwritable(let path, let reason): return "cannot write the users file \(path): \(reason)"
        case .malformedLine(let path, let line, let reason): return "\(path), line \(line): \(reason)"
        case .unprotected(let exposure): return exposure
        case .notPermitted(let denial): return denial.description
        }
    }
}
