import NIOCore
import PostgresNIO
import SimpleTunnelServices

/// The logins of several servers, in the shared database: the same PBKDF2
/// records as the users file, one row per login. Looked up per login when it
/// is checked, so a password set with `tunnel-server passwd --database` holds
/// on every server at once.
public struct DatabaseLogins: LoginDirectory {
    public let database: TunnelDatabase

    public init(database: TunnelDatabase) {
        self.database = database
    }

    /// That login's record, or none; an unknown login is then checked against a
    /// decoy of the default iterations, which is what `passwd` writes.
    public func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        database.perform("looking up a login", on: eventLoop) { client, logger in
            var users: [String: PasswordHash] = [:]
            let rows = try await client.query("SELECT hash FROM simpletunnel_logins WHERE login = \(login)", logger: logger)
            for try await text in rows.decode(String.self) {
                do {
                    users[login] = try PasswordHash(parsing: Substring(text))
                } catch {
                    throw DatabaseError.malformed("the login \(login)'s hash: \(error)")
                }
            }
            return UserDatabase(users: users)
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
}
