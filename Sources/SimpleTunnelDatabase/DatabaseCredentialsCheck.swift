import Logging
import PostgresNIO

extension DatabaseLocation {
    /// The same connection the pool makes, as `PostgresConnection` takes it.
    func connectionConfiguration(password: String?) throws -> PostgresConnection.Configuration {
        switch endpoint {
        case .tcp(let host, let port):
            return PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database,
                tls: verifiedTLS ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable)
        case .unixSocket(let path):
            return PostgresConnection.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        }
    }
}

extension TunnelDatabase {
    /// One connection made at once, before the pool's. The pool retries a
    /// refused login quietly until the operation's deadline (a minute at
    /// start); PostgreSQL's answer to a wrong or missing password is final,
    /// so it is said within seconds, naming the user. A database that does
    /// not answer is left to the pool, which waits for it.
    func checkCredentials(password: String?) async throws(DatabaseError) {
        let configuration: PostgresConnection.Configuration
        do {
            configuration = try location.connectionConfiguration(password: password)
        } catch {
            throw .invalidLocation("cannot set up TLS to the database: \(error)")
        }
        let logger = self.logger
        let attempt = Task { () async throws -> Void in
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close().get()
        }
        let deadline = Task {
            try await Task.sleep(for: timeout)
            attempt.cancel()
        }
        defer { deadline.cancel() }
        do {
            try await attempt.value
        } catch {
            if let refusal = Self.credentialsRefusal(error, user: location.user, hadPassword: password != nil) { throw refusal }
            // Anything else (no answer yet, a refused TCP connection) is the pool's to wait for.
        }
    }

    /// Whether `error` is PostgreSQL refusing the login itself (SQLSTATE class 28), said so that the operator can act.
    static func credentialsRefusal(_ error: any Error, user: String, hadPassword: Bool) -> DatabaseError? {
        guard let error = error as? PSQLError else { return nil }
        if error.code == .authMechanismRequiresPassword {
            return .password("PostgreSQL asks user \(user) for a password: give --database-password-file FILE, or set PGPASSWORD")
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState], state.hasPrefix("28") else { return nil }
        let said = error.serverInfo?[.message] ?? "authentication failed"
        let source = hadPassword ? "check the password in --database-password-file (or PGPASSWORD)" : "no password was given: --database-password-file FILE, or PGPASSWORD"
        return .password("PostgreSQL refused user \(user): \(said) (SQLSTATE \(state)); \(source)")
    }
}
