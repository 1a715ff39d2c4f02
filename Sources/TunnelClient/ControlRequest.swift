import ArgumentParser
import Foundation
import NIOPosix
import SimpleTunnelServices

enum ControlRequest {
    static func send(_ type: String, control: String?) async throws -> ControlProtocol.Response {
        let path = control ?? ControlProtocol.defaultPath()
        do {
            return try await ControlClient.request(type, path: path, isDefaultPath: control == nil, group: MultiThreadedEventLoopGroup.singleton)
        } catch {
            StandardError.write("tunnel-client: \(error)\n")
            throw ExitCode(1)
        }
    }
}
