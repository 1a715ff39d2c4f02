import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("One login cost: every check hashes the directory's highest iteration count", .timeLimit(.minutes(2)))
struct LoginCostTests {
    /// A record of `iterations` that no password matches; made without hashing.
    static func record(_ iterations: Int) -> PasswordHash {
        PasswordHash(iterations: iterations, salt: [UInt8](repeating: 1, count: 16), hash: [UInt8](repeating: 2, count: 32))
    }

    /// The PBKDF2 iterations one check of `login` asks for, counted instead of run.
    static func iterations(checking login: String, in records: UserDatabase) -> Int {
        var spent = 0
        _ = records.verify(login: login, password: "guess") { record, _ in
            spent += record.iterations
            return false
        }
        return spent
    }

    @Test func withTheUsersFileUnknownSlowAndFastLoginsCostTheSame() {
        let file = UserDatabase(users: ["slow": Self.record(400_000), "fast": Self.record(100_000)])
        #expect(Self.iterations(checking: "slow", in: file) == 400_000)
        #expect(Self.iterations(checking: "fast", in: file) == 400_000)
        #expect(Self.iterations(checking: "nobody", in: file) == 400_000)
        #expect(Self.iterations(checking: "nobody", in: UserDatabase()) == PasswordHash.defaultIterations)
    }

    @Test func oneLoginsRecordsCostTheDirectorysHighestCount() {
        // What a database hands over for one check: that login's record (or none) and the highest count it holds.
        #expect(Self.iterations(checking: "fast", in: UserDatabase(users: ["fast": Self.record(100_000)], checkCost: 400_000)) == 400_000)
        #expect(Self.iterations(checking: "nobody", in: UserDatabase(users: [:], checkCost: 400_000)) == 400_000)
        #expect(Self.iterations(checking: "nobody", in: UserDatabase(users: [:], checkCost: 100_000)) == 100_000)
        #expect(Self.iterations(checking: "slow", in: UserDatabase(users: ["slow": Self.record(500_000)], checkCost: 400_000)) == 500_000)
    }

    @Test func aCountBeyondWhatOpenSSLTakesFailsTheCheckNotTheProcess() throws {
        let huge = try PasswordHash(parsing: "pbkdf2-sha256$99999999999$0011223344556677$" + String(repeating: "00", count: 32))
        #expect(!huge.matches("anything"))
    }
}
