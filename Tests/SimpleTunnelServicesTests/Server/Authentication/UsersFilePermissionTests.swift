import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("The users file is private, as a private key is")
struct UsersFilePermissionTests {
    @Test(arguments: [0o640, 0o604, 0o644, 0o660])
    func aUsersFileGroupOrOthersMayReadIsRefusedSayingHowToFixIt(mode: Int) throws {
        var users = UserDatabase()
        users.set("alice", hash: LoginCostTests.record(PasswordHash.minimumIterations))
        let path = NSTemporaryDirectory() + "users-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try users.write(to: path)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try UserDatabase.load(path: path).users.keys.sorted() == ["alice"])

        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        #expect {
            _ = try UserDatabase.load(path: path)
        } throws: { error in
            let text = "\(error)"
            return text.contains("UNPROTECTED USERS FILE") && text.contains("chmod 600 \(path)")
        }
    }
}
