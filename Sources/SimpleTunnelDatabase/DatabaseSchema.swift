import Logging
import PostgresNIO
import SimpleTunnelServices

/// The tables the servers share, created and migrated by whichever server
/// starts first: each migration runs once, in order, recorded in
/// `simpletunnel_schema`; servers starting at once wait for each other on an
/// advisory lock held for the transaction.
enum DatabaseSchema {
    /// Versions in order; a new version appends, never edits.
    static let migrations: [(version: Int, statements: [String])] = [
        (
            1,
            [
                // The same PBKDF2 records as the users file (`PasswordHash`'s text).
                """
                CREATE TABLE simpletunnel_logins (
                    login text PRIMARY KEY, hash text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())
                """,
                // One address per known client; UNIQUE so no two servers ever hand out the same one.
                """
                CREATE TABLE simpletunnel_leases (
                    client text PRIMARY KEY, address inet NOT NULL UNIQUE, pool text NOT NULL,
                    server_id text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())
                """,
                // Which server holds each client's tunnel now, and which session of it.
                """
                CREATE TABLE simpletunnel_sessions (
                    client text PRIMARY KEY, server_id text NOT NULL, session_id bigint NOT NULL,
                    started_at timestamptz NOT NULL DEFAULT now())
                """,
            ]
        ),
        (
            2,
            [
                // One IPv6 address per known client of a dual-stack server, beside its IPv4 one; today's rows stay as they are.
                """
                CREATE TABLE simpletunnel_ipv6_leases (
                    client text PRIMARY KEY, address inet NOT NULL UNIQUE, pool text NOT NULL,
                    server_id text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())
                """
            ]
        ),
        (
            3,
            [
                // However a login is removed (passwd --database --remove, or SQL), every server hears it and ends its tunnels.
                """
                CREATE FUNCTION simpletunnel_login_removed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_notify('\(DatabaseLoginRemoval.notificationChannel)', OLD.login);
                    RETURN OLD;
                END $$
                """,
                """
                CREATE TRIGGER simpletunnel_logins_removed AFTER DELETE ON simpletunnel_logins
                FOR EACH ROW EXECUTE FUNCTION simpletunnel_login_removed()
                """,
            ]
        ),
        (
            4,
            [
                // Each login's bytes per day (UTC), every server adding its own (`DatabaseUsage`).
                """
                CREATE TABLE simpletunnel_usage (
                    login text NOT NULL, day date NOT NULL,
                    bytes_from_client bigint NOT NULL DEFAULT 0, bytes_to_client bigint NOT NULL DEFAULT 0,
                    last_seen timestamptz NOT NULL, PRIMARY KEY (login, day))
                """
            ]
        ),
    ]

    static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Arbitrary, fixed: the key of the advisory lock that serializes migrations.
    static let migrationLock: Int64 = 0x5354_0001

    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS simpletunnel_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
                logger: logger)
            var applied = 0
            for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM simpletunnel_schema", logger: logger)
                .decode(Int.self)
            {
                applied = version
            }
            guard applied <= latestVersion else { throw DatabaseError.schemaTooNew(found: applied, known: latestVersion) }
            for migration in migrations where migration.version > applied {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO simpletunnel_schema (version) VALUES (\(migration.version))", logger: logger)
                logger.notice("database schema migrated to version \(migration.version)")
            }
        }
    }
}
