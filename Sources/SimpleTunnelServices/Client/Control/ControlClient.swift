import Foundation
import NIOCore

/// `tunnel-client status` and `stop`: one request to the running client's control socket.
public enum ControlClient {
    /// `isDefaultPath`: no --control was given, so a client started with sudo may be answering elsewhere.
    public static func request(_ type: String, path: String, isDefaultPath: Bool = false, group: EventLoopGroup) async throws -> ControlProtocol.Response {
        let payload = try JSONEncoder().encode(ControlProtocol.Request(type: type))
        let answer: Data
        do {
            answer = try await ControlSocketClient.exchange(payload, path: path, program: "tunnel-client", group: group)
        } catch ControlError.noAnswer(_, _, let reach) {
            throw ControlClientError.unreachable(.examine(request: type, path: path, isDefaultPath: isDefaultPath, reach: reach))
        }
        return try JSONDecoder().decode(ControlProtocol.Response.self, from: answer)
    }
}
