import NIOConcurrencyHelpers
import NIOCore

/// The users file a running server checks logins against (`--users`), read
/// again on `reload()` (SIGHUP): a file that cannot be read or parsed leaves
/// the users as they were.
public final class UsersFile: LoginDirectory, Sendable {
    public let path: String
    private let current: NIOLockedValueBox<UserDatabase>

    public init(path: String, users: UserDatabase) {
        self.path = path
        self.current = NIOLockedValueBox(users)
    }

    public static func load(path: String) throws(UserDatabaseError) -> UsersFile {
        UsersFile(path: path, users: try UserDatabase.load(path: path))
    }

    public var users: UserDatabase { current.withLockedValue { $0 } }

    public func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        eventLoop.makeSucceededFuture(users)
    }

    public func stillKnows(_ login: String) -> Bool {
        current.withLockedValue { $0.users[login] != nil }
    }

    /// Reads the file again and takes its users whole, or, when it cannot be
    /// read, parsed or is unprotected, throws and keeps the ones it had.
    @discardableResult
    public func reload() throws(UserDatabaseError) -> Change {
        let fresh = try UserDatabase.load(path: path)
        let old = current.withLockedValue { users in
            defer { users = fresh }
            return users
        }
        return Change(old: old, new: fresh)
    }

    /// What a reload changed, by login.
    public struct Change: Sendable, Equatable {
        public var added: [String]
        public var removed: [String]
        public var passwordChanged: [String]

        init(old: UserDatabase, new: UserDatabase) {
            added = new.users.keys.filter { old.users[$0] == nil }.sorted()
            removed = old.users.keys.filter { new.users[$0] == nil }.sorted()
            passwordChanged = new.users.compactMap { login, hash in old.users[login].map { $0 != hash } == true ? login : nil }.sorted()
        }
    }
}
