import Foundation
import PostgresNIO
import SimpleTunnelServices

/// Where the shared database is (`--database postgres://USER@HOST:PORT/DB`),
/// parsed without a password: a command line is visible to every user of the
/// machine, so the password comes from a file or `PGPASSWORD` (see
/// `DatabasePassword`). `?host=/run/postgresql` names a Unix socket folder, as
/// libpq does (with `port=N` when the address has no host); `?sslmode=verify-full` asks for TLS with the system's trust roots.
public struct DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
    public enum Endpoint: Sendable, Hashable {
        case tcp(host: String, port: Int)
        /// The socket file itself: `FOLDER/.s.PGSQL.PORT`.
        case unixSocket(path: String)
    }

    public var user: String
    public var endpoint: Endpoint
    public var database: String
    /// TLS to the database, verifying its certificate; off by default (loopback, a Unix socket, a private network).
    public var verifiedTLS: Bool

    public static let defaultPort = 5432

    public init(parsing text: String) throws(DatabaseError) {
        // Errors show the address redacted: whatever secret it holds stays out of logs and terminals.
        let shown = DatabaseAddressRedaction.redacted(text)
        guard let components = URLComponents(string: text), components.scheme == "postgres" || components.scheme == "postgresql" else {
            throw .invalidLocation("\"\(shown)\" is not a postgres://USER@HOST:PORT/DATABASE address")
        }
        guard components.password == nil else {
            throw .invalidLocation(
                "the database address carries a password, which every user of this machine could read on the command line; "
                    + "remove it and put the password in a file given with --database-password-file (mode 0600), or in PGPASSWORD")
        }
        guard let user = components.user, !user.isEmpty else {
            throw .invalidLocation("\(shown): name the database user, as in postgres://tunnel@db.example:5432/tunnel")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw .invalidLocation("\(shown): name the database after the host, as in postgres://tunnel@db.example:5432/tunnel")
        }
        var port = components.port ?? Self.defaultPort
        var socketFolder: String?
        var verifiedTLS = false
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("host", let folder?) where folder.hasPrefix("/"):
                socketFolder = folder
            case ("port", let text?) where Int(text).map({ (1...65535).contains($0) }) == true:
                port = Int(text) ?? port
            case ("sslmode", "disable"?):
                verifiedTLS = false
            case ("sslmode", "verify-full"?):
                verifiedTLS = true
            default:
                throw .invalidLocation(
                    "\(shown): \(item.value == nil ? "a query item without NAME=VALUE" : "the value given for \(item.name)") is not understood; known are host=/SOCKET/FOLDER, port=N and sslmode=disable or verify-full")
            }
        }
        if let socketFolder {
            endpoint = .unixSocket(path: socketFolder + "/.s.PGSQL.\(port)")
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw .invalidLocation("\(shown): name the database host, or a socket folder with ?host=/run/postgresql")
            }
            endpoint = .tcp(host: host, port: port)
        }
        self.user = user
        self.database = database
        self.verifiedTLS = verifiedTLS
    }

    public var description: String {
        switch endpoint {
        case .tcp(let host, let port): return "postgres://\(user)@\(host):\(port)/\(database)"
        case .unixSocket(let path): return "postgres://\(user)@/\(database) (socket \(path))"
        }
    }

    func clientConfiguration(password: String?) -> PostgresClient.Configuration {
        switch endpoint {
        case .tcp(let host, let port):
            return PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database,
                tls: verifiedTLS ? .require(.makeClientConfiguration()) : .disable)
        case .unixSocket(let path):
            return PostgresClient.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        }
    }
}
