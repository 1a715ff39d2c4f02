import ArgumentParser
import Foundation
import NIOPosix
import SimpleTunnelServices

/// `tunnel-server status` and `kick`: one request to the running server's control socket.
enum ServerControlRequest {
    static func send(_ request: ServerControlProtocol.Request, control: String?) async throws -> ServerControlProtocol.Response {
        let path = control ?? defaultPath
        do {
            let payload = try JSONEncoder().encode(request)
            let answer = try await ControlSocketClient.exchange(payload, path: path, program: "tunnel-server", group: MultiThreadedEventLoopGroup.singleton)
            return try JSONDecoder().decode(ServerControlProtocol.Response.self, from: answer)
        } catch {
            StandardError.write("tunnel-server: \(error)\n")
            throw ExitCode(1)
        }
    }

    /// The user's own server's socket, else a system service's (the service user asking root's server).
    static var defaultPath: String {
        let own = ServerControlProtocol.defaultPath()
        let system = ServerControlProtocol.defaultPath(isRoot: true)
        return FileManager.default.fileExists(atPath: own) || !FileManager.default.fileExists(atPath: system) ? own : system
    }

    static func fail(_ message: String) -> ExitCode {
        StandardError.write("tunnel-server: \(message)\n")
        return ExitCode(1)
    }
}

struct ServerStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running server's tunnels: login or certificate subject, peer, lease, since, bytes, flows, TLS version; and its totals.")

    @Option(help: "The running server's control socket. Default: /run/simpletunnel/server.sock as root, else $XDG_RUNTIME_DIR/simpletunnel/server.sock or /tmp/simpletunnel-UID/server.sock.")
    var control: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        let response = try await ServerControlRequest.send(.init(type: "status"), control: control)
        guard let status = response.status else { throw ServerControlRequest.fail(response.error ?? "no status in the answer") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
        } else {
            print(status.text)
        }
    }
}

struct Kick: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End the tunnels of one login now (the client may reconnect: to keep it out, `passwd --remove` it and reload).")

    @Argument(help: "The login whose tunnels end.")
    var login: String

    @Option(help: "The running server's control socket (see `status --help`).")
    var control: String?

    func run() async throws {
        let response = try await ServerControlRequest.send(.init(type: "kick", login: login), control: control)
        guard response.ok, let ended = response.ended else { throw ServerControlRequest.fail(response.error ?? "the server did not say") }
        print("ended \(ended) tunnel\(ended == 1 ? "" : "s") of \(PeerText.quoted(login))")
    }
}
