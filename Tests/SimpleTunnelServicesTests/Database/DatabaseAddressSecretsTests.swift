import Foundation
import Logging
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

@Suite("Database addresses: errors never echo secrets, and an unencrypted network path is warned of")
struct DatabaseAddressSecretsTests {
    @Test(arguments: [
        "mysql://tunnel:s3cret@db.example/shared",
        "postgres://tunnel:s3cret@db.example/shared",
        "postgres://db.example/shared?password=s3cret",
        "postgres://tunnel@db.example/shared?password=s3cret",
        "postgres://tunnel@db.example/shared?sslmode=s3cret",
        "postgres://tunnel@db.example/shared?s3cret",
        "postgres://tunnel@db.example?password=s3cret",
        "postgres://:s3cret@db.example/shared",
        "mysql://tunnel:s3/cr?et@db.example/shared",
        "mysql://tunnel@db.example/shared?password=s3cret#s3cret",
        "not an address at all?password=s3cret",
    ])
    func anErrorAboutTheAddressShowsNoPasswordAndNoQueryValue(address: String) {
        #expect {
            _ = try DatabaseLocation(parsing: address)
        } throws: { error in
            let text = "\(error)" + String(reflecting: error)
            return !text.contains("s3cret") && !text.contains("s3/cr") && !text.contains("et@")
        }
    }

    @Test func redactionKeepsWhatLocatesTheDatabase() {
        #expect(DatabaseAddressRedaction.redacted("mysql://tunnel:pw@db.example:5432/shared?sslmode=require&host=/run")
            == "mysql://tunnel:***@db.example:5432/shared?sslmode=***&host=***")
        #expect(DatabaseAddressRedaction.redacted("postgres://tunnel@db.example/shared") == "postgres://tunnel@db.example/shared")
        #expect(DatabaseAddressRedaction.redacted("postgres://tunnel@db.example/x?flag#frag") == "postgres://tunnel@db.example/x?***#***")
    }

    @Test(arguments: [
        ("postgres://tunnel@db.example:5432/tunnel", true),
        ("postgres://tunnel@10.0.0.5/tunnel", true),
        ("postgres://tunnel@[2001:db8::5]/tunnel", true),
        ("postgres://tunnel@db.example/tunnel?sslmode=disable", true),
        ("postgres://tunnel@db.example/tunnel?sslmode=verify-full", false),
        ("postgres://tunnel@127.0.0.1/tunnel", false),
        ("postgres://tunnel@127.3.2.1/tunnel", false),
        ("postgres://tunnel@[::1]/tunnel", false),
        ("postgres://tunnel@localhost/tunnel", false),
        ("postgres://tunnel@/tunnel?host=/run/postgresql", false),
    ])
    func aDatabaseOffLoopbackWithoutVerifiedTLSIsWarnedOfAtStart(address: String, warned: Bool) throws {
        let (logger, lines) = CapturingLogHandler.logger()
        // Made, never run: nothing is resolved or connected.
        _ = TunnelDatabase(location: try DatabaseLocation(parsing: address), password: nil, logger: logger)
        let warnings = lines.all.filter { $0.message.contains("sslmode=verify-full") }
        #expect(warnings.count == (warned ? 1 : 0), "\(lines.all.map(\.message))")
        #expect(warnings.allSatisfy { $0.message.contains("add ?sslmode=verify-full") })
    }
}
