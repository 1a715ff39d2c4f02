import Logging
import NIOCore
import PostgresNIO
import SimpleTunnelServices

/// The logins of several servers, in the shared database: the same PBKDF2
/// records as the users file, one row per login. Looked up per login when it
/// is checked, so a password set with `tunnel-server passwd --database` holds
/// on every server at once. Every check costs the highest iteration count
/// stored (`LoginCheckCost`), whether the login exists or not.
public struct DatabaseLogins: LoginDirectory {
    public let database: TunnelDatabase

    public init(database: TunnelDatabase) {
        self.database = database
    }

    /// That login's record, or none, with the check's cost. A login the
    /// database refuses as malformed (a NUL byte) is the client's failed login.
    public func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        let database = self.database
        return database.perform("looking up a login", on: eventLoop) { client, logger in
            var users: [String: PasswordHash] = [:]
            let rows = try await client.query("SELECT hash FROM simpletunnel_logins WHERE login = \(login)", logger: logger)
            for try await text in rows.decode(String.self) {
                do {
                    users[login] = try PasswordHash(parsing: Substring(text))
                } catch {
                    throw DatabaseError.malformed("the login \(login)'s hash: \(error)")
                }
            }
            return UserDatabase(users: users, checkCost: try await database.loginCheckCost(seeing: users[login], client: client, logger: logger))
        }
        .flatMapErrorThrowing { error in
            if case DatabaseError.invalidValue(let reason)? = error as? DatabaseError { throw LoginDirectoryRefusedLogin(reason: reason) }
            throw error
        }
    }

    /// Adds or replaces a login (`tunnel-server passwd --database`).
    public func set(_ login: String, hash: PasswordHash) async throws(DatabaseError) {
        try await database.perform("saving a login") { client, logger in
            _ = try await client.query(
                """
                INSERT INTO simpletunnel_logins (login, hash) VALUES (\(login), \(hash.description))
                ON CONFLICT (login) DO UPDATE SET hash = EXCLUDED.hash, updated_at = now()
                """, logger: logger)
        }
    }

    /// Removes a login (`tunnel-server passwd --database --remove`); false when there was none.
    /// Every server sharing the database ends its tunnels (`DatabaseLoginRemoval`).
    public func remove(_ login: String) async throws(DatabaseError) -> Bool {
        try await database.perform("removing a login") { client, logger in
            var removed = false
            let rows = try await client.query("DELETE FROM simpletunnel_logins WHERE login = \(login) RETURNING login", logger: logger)
            for try await _ in rows.decode(String.self) { removed = true }
            return removed
        }
    }

    /// Every login, sorted (`tunnel-server passwd --database --list`).
    public func all() async throws(DatabaseError) -> [String] {
        try await database.perform("listing the logins") { client, logger in
            var logins: [String] = []
            for try await login in try await client.query("SELECT login FROM simpletunnel_logins ORDER BY login", logger: logger).decode(String.self) {
                logins.append(login)
            }
            return logins
        }
    }
}

extension TunnelDatabase {
    /// The cost of a check now: cached, asked of the database when not yet known or due, raised by a slower `record`.
    func loginCheckCost(seeing record: PasswordHash?, client: PostgresClient, logger: Logger) async throws -> Int {
        if loginCost.withLockedValue({ $0.current() }) == nil {
            // Rows a hand edit broke count for nothing here; reading that login says what is wrong.
            let highest = try await client.query(
                """
                SELECT max(split_part(hash, '$', 2)::bigint) FROM simpletunnel_logins WHERE split_part(hash, '$', 2) ~ '^[0-9]{1,9}$'
                """, logger: logger)
            var found: Int?
            for try await value in highest.decode(Int?.self) { found = value }
            loginCost.withLockedValue { $0.found(found) }
        }
        return loginCost.withLockedValue { cost in
            if let record { cost.saw(record.iterations) }
            return cost.iterations ?? PasswordHash.defaultIterations
        }
    }
}
