import ArgumentParser
import SimpleTunnelServices

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop the running client, as SIGTERM would.")

    @Option(help: "The running client's control socket. Default: $XDG_RUNTIME_DIR/simpletunnel/client.sock; without XDG_RUNTIME_DIR, /run/simpletunnel-client/client.sock for root, else /tmp/simpletunnel-UID/client.sock.")
    var control: String?

    func run() async throws {
        let response = try await ControlRequest.send("stop", control: control)
        print(response.ok ? "stopping" : (response.error ?? "refused"))
    }
}
