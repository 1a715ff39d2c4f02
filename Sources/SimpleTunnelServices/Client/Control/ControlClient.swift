import Foundation
import NIOCore

/// `tunnel-client status` and `stop`: one request to the running client's control socket.
public enum ControlClient {
    public static func request(_ type: String, path: String, group: EventLoopGroup) async throws -> ControlProtocol.Response {
        let payload = try JSONEncoder().encode(ControlProtocol.Request(type: type))
        let answer = try await ControlSocketClient.exchange(payload, path: path, program: "tunnel-client", group: group)
        return try JSONDecoder().decode(ControlProtocol.Response.self, from: answer)
    }
}
