import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("tunnel-client status finds a tunnel-client@ service", .timeLimit(.minutes(3)))
struct ClientControlSocketSearchTests {
    @Test func theDefaultWinsThenTheOneInstanceThenNoGuess() {
        let one = ["office": "/run/simpletunnel-client-office/simpletunnel/client.sock"]
        #expect(ClientControlSocketSearch.choose(defaultPath: "/d", defaultExists: true, instances: one) == .path("/d"))
        #expect(ClientControlSocketSearch.choose(defaultPath: "/d", defaultExists: false, instances: [:]) == .path("/d"))
        #expect(ClientControlSocketSearch.choose(defaultPath: "/d", defaultExists: false, instances: one) == .path(one["office"]!))
        var two = one
        two["lab"] = "/run/simpletunnel-client-lab/simpletunnel/client.sock"
        let search = ClientControlSocketSearch.choose(defaultPath: "/d", defaultExists: false, instances: two)
        #expect(search == .ambiguous(two))
        #expect(search.advice?.contains("tunnel-client@lab: --control /run/simpletunnel-client-lab/simpletunnel/client.sock") == true)
    }

    @Test func instancesAreFoundByTheFoldersTheUnitMakes() throws {
        let run = NSTemporaryDirectory() + "st-run-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: run) }
        for name in ["simpletunnel-client-office", "simpletunnel-client-idle", "simpletunnel"] {
            try FileManager.default.createDirectory(atPath: "\(run)/\(name)/simpletunnel", withIntermediateDirectories: true)
        }
        // Only a folder that holds a socket file counts: a stopped instance's folder is gone or empty.
        FileManager.default.createFile(atPath: "\(run)/simpletunnel-client-office/simpletunnel/client.sock", contents: nil)
        #expect(ClientControlSocketSearch.instanceSockets(runtimeDirectory: run) == ["office": "\(run)/simpletunnel-client-office/simpletunnel/client.sock"])
    }
}
