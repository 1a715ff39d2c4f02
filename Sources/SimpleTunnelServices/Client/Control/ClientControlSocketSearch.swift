import Foundation

/// Which running client `tunnel-client status` and `stop` talk to when no
/// `--control` is given: the default socket when it exists, else the one
/// `tunnel-client@NAME` service (whose unit gives it a runtime folder of
/// its own), else, with several, none: the operator names one.
public enum ClientControlSocketSearch: Equatable, Sendable {
    case path(String)
    /// Several instances run: `--control` must say which.
    case ambiguous([String: String])

    /// The unit sets `XDG_RUNTIME_DIR=%t/simpletunnel-client-%i`, so an
    /// instance's socket is `/run/simpletunnel-client-NAME/simpletunnel/client.sock`.
    public static func instanceSockets(runtimeDirectory: String = "/run") -> [String: String] {
        let prefix = "simpletunnel-client-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory)) ?? []
        var sockets: [String: String] = [:]
        for name in names where name.hasPrefix(prefix) && name.count > prefix.count {
            let path = "\(runtimeDirectory)/\(name)/simpletunnel/client.sock"
            if FileManager.default.fileExists(atPath: path) { sockets[String(name.dropFirst(prefix.count))] = path }
        }
        return sockets
    }

    public static func choose(defaultPath: String, defaultExists: Bool, instances: [String: String]) -> ClientControlSocketSearch {
        guard !defaultExists, !instances.isEmpty else { return .path(defaultPath) }
        guard instances.count > 1 else { return .path(instances.values.first ?? defaultPath) }
        return .ambiguous(instances)
    }

    /// Said when several instances run.
    public var advice: String? {
        guard case .ambiguous(let instances) = self else { return nil }
        let listed = instances.sorted { $0.key < $1.key }.map { "tunnel-client@\($0.key): --control \($0.value)" }
        return "several tunnel-client services run; say which with --control:\n  " + listed.joined(separator: "\n  ")
    }
}
