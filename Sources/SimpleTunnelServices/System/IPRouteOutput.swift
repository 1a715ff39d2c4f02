import Foundation

/// The fields we read from `ip -j` output; iproute2 prints many more.
enum IPRouteOutput {
    struct Link: Decodable {
        let mtu: Int
        let flags: [String]?

        var isUp: Bool { flags?.contains("UP") ?? false }
    }

    struct Route: Decodable {
        let type: String?
        let gateway: String?
        let dev: String?
        let prefsrc: String?
    }

    /// Decodes the JSON array `ip -j` prints and returns its first element.
    static func first<Element: Decodable>(_ type: Element.Type, from result: CommandResult, command: [String]) throws(NetworkConfigurationError) -> Element {
        guard let element = try? JSONDecoder().decode([Element].self, from: Data(result.standardOutput.utf8)).first else {
            throw .unexpectedOutput(command: command, output: result.standardOutput)
        }
        return element
    }
}

/// How the system currently reaches a host (`ip route get`).
public struct IPv4RouteLookup: Sendable, Hashable {
    public var destination: IPv4Address
    /// Nil when the host is on a directly attached network.
    public var gateway: IPv4Address?
    public var device: String
    public var preferredSource: IPv4Address?
    /// The host is one of this machine's own addresses (route type `local`).
    public var isLocal: Bool
}
