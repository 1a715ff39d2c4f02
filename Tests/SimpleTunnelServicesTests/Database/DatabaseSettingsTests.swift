import Foundation
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Database settings: --database, its password, the configuration file")
struct DatabaseSettingsTests {
    @Test func anAddressNamesUserHostPortAndDatabaseOrASocketFolder() throws {
        let tcp = try DatabaseLocation(parsing: "postgres://tunnel@db.example:6543/shared")
        #expect(tcp.user == "tunnel" && tcp.database == "shared" && tcp.endpoint == .tcp(host: "db.example", port: 6543) && !tcp.verifiedTLS)
        #expect(try DatabaseLocation(parsing: "postgresql://tunnel@db.example/shared").endpoint == .tcp(host: "db.example", port: 5432))
        let socket = try DatabaseLocation(parsing: "postgres://tunnel@/shared?host=/run/postgresql")
        #expect(socket.endpoint == .unixSocket(path: "/run/postgresql/.s.PGSQL.5432"))
        #expect(try DatabaseLocation(parsing: "postgres://tunnel@db.example/shared?sslmode=verify-full").verifiedTLS)
    }

    @Test(arguments: [
        ("postgres://tunnel:secret@db.example/shared", "--database-password-file"),
        ("mysql://tunnel@db.example/shared", "postgres://"),
        ("postgres://db.example/shared", "name the database user"),
        ("postgres://tunnel@db.example", "name the database"),
        ("postgres://tunnel@db.example/shared?sslmode=prefer", "sslmode=disable or verify-full"),
    ])
    func aBadAddressIsRefusedSayingWhatToDo(address: String, advice: String) {
        #expect {
            _ = try DatabaseLocation(parsing: address)
        } throws: { error in
            "\(error)".contains(advice)
        }
    }

    @Test func thePasswordComesFromAPrivateFileOrTheEnvironment() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("db-password-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/password"
        _ = FileManager.default.createFile(atPath: file, contents: Data("s3cret\nignored\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(try DatabasePassword.read(file: file, environment: ["PGPASSWORD": "other"]) == "s3cret")
        #expect(try DatabasePassword.read(file: nil, environment: ["PGPASSWORD": "other"]) == "other")
        #expect(try DatabasePassword.read(file: nil, environment: [:]) == nil)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect {
            _ = try DatabasePassword.read(file: file, environment: [:])
        } throws: { error in
            "\(error)".contains("chmod 600")
        }
    }

    @Test func theConfigurationFileNamesTheDatabaseAndItsPasswordFile() throws {
        let configuration = try TunnelServerConfiguration(propertyList: .dictionary([
            "IPv4": .dictionary(["Pool": .dictionary(["StartAddress": .string("10.90.0.2"), "EndAddress": .string("10.90.0.9")])]),
            "Server": .dictionary(["Database": .string("postgres://tunnel@db.example/shared"), "DatabasePasswordFile": .string("/etc/simpletunnel/db")])
        ]))
        #expect(configuration.server.databaseURL == "postgres://tunnel@db.example/shared")
        #expect(configuration.server.databasePasswordFilePath == "/etc/simpletunnel/db")
    }

    @Test func withADatabaseTunnelsMustLogInAndAUsersFileBesideItIsRefused() throws {
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = NSTemporaryDirectory() + "launch-test-\(UUID().uuidString)"
        options.plaintext = true
        options.databaseURL = "postgres://tunnel@127.0.0.1/shared"
        // The library alone has no database client: the executable hands in the PostgreSQL opener.
        #expect {
            _ = try TunnelServerLaunch.prepare(options, resolvConf: nil, environment: [:])
        } throws: { error in
            "\(error)".contains("no database support")
        }
        let launch = try TunnelServerLaunch.prepare(options, openSharedStore: TunnelDatabase.opener, resolvConf: nil, environment: [:])
        #expect((launch.database as? TunnelDatabase)?.location.database == "shared")
        #expect(launch.settings.authentication?.users is DatabaseLogins)
        options.usersPath = "/etc/simpletunnel/users"
        #expect {
            _ = try TunnelServerLaunch.prepare(options, openSharedStore: TunnelDatabase.opener, resolvConf: nil, environment: [:])
        } throws: { error in
            "\(error)".contains("--users and --database")
        }
    }
}
