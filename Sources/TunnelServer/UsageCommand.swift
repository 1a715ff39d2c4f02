import ArgumentParser
import Foundation
import SimpleTunnelServices

struct Usage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each login's bytes each way and when it was last seen, kept across restarts (in the database: all servers together).")

    @Option(help: "Count from this day on, YYYY-MM-DD (UTC); the figures are kept per day. Default: everything kept.")
    var since: String?

    @Option(help: "The running server's control socket (see `status --help`).")
    var control: String?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if let since, UsageDay(parsing: since) == nil {
            throw ValidationError("--since \(since): give a day as YYYY-MM-DD (UTC), such as 2026-11-01")
        }
    }

    func run() async throws {
        let response = try await ServerControlRequest.send(.init(type: "usage", since: since.flatMap(UsageDay.init(parsing:))?.text), control: control)
        guard let usage = response.usage else { throw ServerControlRequest.fail(response.error ?? "no usage in the answer") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(usage), as: UTF8.self))
        } else {
            print(usage.text)
        }
    }
}
