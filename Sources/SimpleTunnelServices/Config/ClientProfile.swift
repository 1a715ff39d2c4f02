import Foundation

/// What an operator hands a user so that `tunnel-client --profile FILE`
/// needs no other option: where the server is, how to trust it, which login
/// to use and how to take the pushed DNS. Never a password: the client asks
/// for that (a password file, or `$SIMPLETUNNEL_PASSWORD`).
public struct ClientProfile: Codable, Equatable, Sendable {
    /// HOST:PORT, as `--server` takes it.
    public var server: String
    /// The server certificate's SHA-256 fingerprints (`--pin-sha256`).
    public var pinSHA256: [String]
    /// `--server-name`, when the certificate names another host than `server`'s.
    public var serverName: String?
    /// `--user`.
    public var user: String?
    /// `--dns` for `tunnel-client ip`.
    public var dns: String?

    public init(server: String, pinSHA256: [String], serverName: String? = nil, user: String? = nil, dns: String? = nil) {
        self.server = server
        self.pinSHA256 = pinSHA256
        self.serverName = serverName
        self.user = user
        self.dns = dns
    }

    static let knownKeys: Set<String> = ["server", "pinSHA256", "serverName", "user", "dns"]

    /// Read strictly: an unknown key (a typo, or a password someone added) is refused, not ignored.
    public static func load(path: String) throws(ClientProfileError) -> ClientProfile {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, reason: error.localizedDescription)
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformed(path: path, reason: "not a JSON object")
        }
        if let unknown = object.keys.sorted().first(where: { !knownKeys.contains($0) }) {
            throw .malformed(path: path, reason: "unknown key \"\(unknown)\"; known: \(knownKeys.sorted().joined(separator: ", "))")
        }
        do {
            return try JSONDecoder().decode(ClientProfile.self, from: data)
        } catch {
            throw .malformed(path: path, reason: "\(error)")
        }
    }

    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self) + "\n"
    }

    /// The options it stands for; `dns` only for `ip`, the one command that takes it.
    public func arguments(for subcommand: String) -> [String] {
        var arguments = ["--server", server]
        for pin in pinSHA256 { arguments += ["--pin-sha256", pin] }
        if let serverName { arguments += ["--server-name", serverName] }
        if let user { arguments += ["--user", user] }
        if let dns, subcommand == "ip" { arguments += ["--dns", dns] }
        return arguments
    }

    /// `tunnel-client SUBCOMMAND --profile FILE ...`: the profile's options go
    /// right after the subcommand, so that any given on the command line come
    /// later and win. Nil when no `--profile` is given.
    public static func expanding(_ arguments: [String]) throws(ClientProfileError) -> [String]? {
        guard let index = arguments.firstIndex(where: { $0 == "--profile" || $0.hasPrefix("--profile=") }) else { return nil }
        var rest = arguments
        let path: String
        if rest[index] == "--profile" {
            guard rest.indices.contains(index + 1) else { throw .malformed(path: "", reason: "--profile needs a FILE") }
            path = rest[index + 1]
            rest.removeSubrange(index...(index + 1))
        } else {
            path = String(rest[index].dropFirst("--profile=".count))
            rest.remove(at: index)
        }
        guard let subcommand = rest.first, !subcommand.hasPrefix("-") else {
            throw .malformed(path: path, reason: "give the subcommand first: tunnel-client ip --profile FILE")
        }
        return [subcommand] + (try load(path: path)).arguments(for: subcommand) + rest.dropFirst()
    }
}

public enum ClientProfileError: Error, CustomStringConvertible, Equatable {
    case unreadable(path: String, reason: String)
    case malformed(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "--profile \(path): cannot read it: \(reason)"
        case .malformed(let path, let reason): return "--profile \(path): \(reason)"
        }
    }
}
