import ArgumentParser
import Foundation
import SimpleTunnelServices

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the running client's state: server, TLS, lease, flows, bytes, uptime, last error.")

    @Option(help: "The running client's control socket. Default: $XDG_RUNTIME_DIR/simpletunnel/client.sock; without XDG_RUNTIME_DIR, /run/simpletunnel-client/client.sock for root, else /tmp/simpletunnel-UID/client.sock.")
    var control: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        let response = try await ControlRequest.send("status", control: control)
        guard let status = response.status else { throw ValidationError(response.error ?? "no status in the answer") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
        } else {
            print(status.text)
        }
    }
}
