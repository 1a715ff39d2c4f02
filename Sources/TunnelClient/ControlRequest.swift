import ArgumentParser
import Foundation
import NIOPosix
import SimpleTunnelServices

enum ControlRequest {
    static func send(_ type: String, control: String?) async throws -> ControlProtocol.Response {
        let path: String
        if let control {
            path = control
        } else {
            let own = ControlProtocol.defaultPath()
            let search = ClientControlSocketSearch.choose(
                defaultPath: own, defaultExists: FileManager.default.fileExists(atPath: own), instances: ClientControlSocketSearch.instanceSockets())
            switch search {
            case .path(let found): path = found
            case .ambiguous:
                StandardError.write("tunnel-client: \(search.advice ?? "")\n")
                throw ExitCode(1)
            }
        }
        do {
            return try await ControlClient.request(type, path: path, isDefaultPath: control == nil, group: MultiThreadedEventLoopGroup.singleton)
        } catch {
            StandardError.write("tunnel-client: \(error)\n")
            throw ExitCode(1)
        }
    }
}
