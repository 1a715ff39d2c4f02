import Foundation

/// The addresses remembered for known clients, kept across restarts of the
/// server in a small JSON file, rewritten whole (atomically) on each change:
///
///     {"leases": {"login:alice": "10.90.0.2", "subject:CN=phone": "10.90.0.3"},
///      "ipv6Leases": {"login:alice": "fd00:90::2"}}
///
/// `ipv6Leases` is written only when the server offers IPv6; files without it load as before.
public struct LeaseFile: Sendable {
    public let path: String
    /// Its name in the server's state directory.
    public static let defaultName = "leases.json"

    private struct Contents: Codable {
        var leases: [String: String]
        var ipv6Leases: [String: String]?
    }

    /// The remembered address of each known client, per family.
    struct Leases: Sendable, Equatable {
        var ipv4: [String: IPv4Address] = [:]
        var ipv6: [String: IPv6Address] = [:]
    }

    public init(path: String) {
        self.path = path
    }

    /// The remembered leases; empty when the file does not exist yet.
    func load() throws(LeaseFileError) -> Leases {
        guard FileManager.default.fileExists(atPath: path) else { return Leases() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LeaseFileError("\(path): cannot be read")
        }
        let contents: Contents
        do {
            contents = try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw LeaseFileError("\(path) is not a lease file (\(error)); move it away to start with no remembered leases")
        }
        var leases: [String: IPv4Address] = [:]
        for (client, text) in contents.leases {
            guard let address = IPv4Address(text) else {
                throw LeaseFileError("\(path): the lease of \(client), \"\(text)\", is not an IPv4 address")
            }
            leases[client] = address
        }
        var leases6: [String: IPv6Address] = [:]
        for (client, text) in contents.ipv6Leases ?? [:] {
            guard let address = IPv6Address(text) else {
                throw LeaseFileError("\(path): the IPv6 lease of \(client), \"\(text)\", is not an IPv6 address")
            }
            leases6[client] = address
        }
        return Leases(ipv4: leases, ipv6: leases6)
    }

    func save(_ leases: Leases) throws(LeaseFileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let contents = Contents(
            leases: leases.ipv4.mapValues(\.description), ipv6Leases: leases.ipv6.isEmpty ? nil : leases.ipv6.mapValues(\.description))
        do {
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            let data = try encoder.encode(contents)
            try AtomicFile.write(Array(data), to: path, permissions: 0o600)
        } catch {
            throw LeaseFileError("cannot save leases to \(path): \(error)")
        }
    }
}

public struct LeaseFileError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
