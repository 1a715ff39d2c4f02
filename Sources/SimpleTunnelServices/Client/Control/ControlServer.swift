import Foundation
import Logging
import NIOCore

/// The running client's control socket (`ControlSocketServer`), with requests
/// routed by `type` to registered handlers.
public final class ControlServer: Sendable {
    public typealias Handler = @Sendable (ControlProtocol.Request) async -> ControlProtocol.Response

    private let socket: ControlSocketServer
    public var path: String { socket.path }

    private init(socket: ControlSocketServer) {
        self.socket = socket
    }

    /// - Parameter afterAnswer: by request type, what starts only once the answer is written
    ///   (`stop`: the asker hears "stopping" before the socket goes away).
    public static func start(
        path: String, handlers: [String: Handler], afterAnswer: [String: @Sendable () -> Void] = [:], group: EventLoopGroup, logger: Logger
    ) async throws -> ControlServer {
        let known = handlers.keys.sorted().joined(separator: ", ")
        let then: @Sendable (Data) -> Void = { payload in
            guard let request = try? JSONDecoder().decode(ControlProtocol.Request.self, from: payload) else { return }
            afterAnswer[request.type]?()
        }
        let socket = try await ControlSocketServer.start(
            path: path, program: "tunnel-client", group: group, logger: logger, afterAnswer: then
        ) { payload in
            let response: ControlProtocol.Response
            let request = try? JSONDecoder().decode(ControlProtocol.Request.self, from: payload)
            if let request, let handler = handlers[request.type] {
                response = await handler(request)
            } else if let request {
                response = .init(ok: false, error: "unknown request type \"\(request.type)\"; known: \(known)")
            } else {
                response = .init(ok: false, error: "a request is a JSON object with a \"type\"; known: \(known)")
            }
            return (try? JSONEncoder().encode(response)) ?? Data()
        }
        return ControlServer(socket: socket)
    }

    public func close() async {
        await socket.close()
    }
}
