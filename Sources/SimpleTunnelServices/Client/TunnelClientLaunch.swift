import Foundation
import NIOCore

/// What the client's command line says about reaching the server.
public struct TunnelClientLaunchOptions: Sendable {
    /// `HOST:PORT`, IPv6 in brackets.
    public var server = "127.0.0.1:4433"
    public var caFile: String?
    public var pinnedSHA256: [String] = []
    public var insecure = false
    public var certificatePath: String?
    public var privateKeyPath: String?
    public var serverName: String?
    /// Connect here instead of looking up `server`'s host, which still names the certificate (`--server-address`).
    public var serverAddress: String?
    public var plaintext = false
    /// Login for servers that require one, and where its password is.
    public var login: String?
    public var passwordFile: String?
    /// Where the password comes from when no file is given.
    public static let passwordEnvironmentVariable = "SIMPLETUNNEL_PASSWORD"

    public init() {}

    /// The login and password, when a login is given.
    func credentials(environment: [String: String]) throws -> (login: String, password: String)? {
        guard let login else {
            guard passwordFile == nil else { throw TunnelClientLaunchError("--password-file needs --user") }
            return nil
        }
        if let passwordFile {
            // Like ssh with a private key: a password others can read is refused, not used.
            var status = stat()
            if stat(passwordFile, &status) == 0, status.st_mode & 0o077 != 0 {
                let mode = String(status.st_mode & 0o777, radix: 8)
                throw TunnelClientLaunchError(
                    "--password-file \(passwordFile): others can read or change it (mode \(mode)); `chmod 600 \(passwordFile)` and try again")
            }
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw TunnelClientLaunchError("--password-file \(passwordFile): cannot be read")
            }
            return (login, String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? ""))
        }
        guard let password = environment[Self.passwordEnvironmentVariable] else {
            throw TunnelClientLaunchError("--user \(login) needs a password: --password-file FILE, or the \(Self.passwordEnvironmentVariable) environment variable")
        }
        return (login, password)
    }

    /// Turns the options into connection settings, refusing contradictions.
    public func connectionSettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> TunnelClientConnection.Settings {
        let named = try Self.parseServer(server)
        let endpoint = try address(for: named)
        let credentials = try credentials(environment: environment)
        let trustChoices = [caFile != nil, !pinnedSHA256.isEmpty, insecure].filter { $0 }.count
        guard trustChoices <= 1 else {
            throw TunnelClientLaunchError("--ca, --pin-sha256 and --insecure are alternatives: give one (or none, for the system trust store)")
        }
        if plaintext {
            guard trustChoices == 0, certificatePath == nil, privateKeyPath == nil else {
                throw TunnelClientLaunchError("--plaintext turns TLS off: it cannot be combined with --ca, --pin-sha256, --insecure, --cert or --key")
            }
            var settings = TunnelClientConnection.Settings(host: endpoint.host, port: endpoint.port, tls: nil)
            settings.credentials = credentials
            return settings
        }
        guard (certificatePath == nil) == (privateKeyPath == nil) else {
            throw TunnelClientLaunchError("--cert and --key go together (mutual TLS)")
        }
        let trust: TLSConfiguration.Trust
        if let caFile {
            trust = .caFile(caFile)
        } else if !pinnedSHA256.isEmpty {
            trust = .pinnedSHA256(try pinnedSHA256.map(Self.parseFingerprint))
        } else if insecure {
            trust = .insecureNoVerification
        } else {
            trust = .system
        }
        let configuration = TLSConfiguration.client(
            trust: trust,
            serverName: serverName ?? named.host,
            certificateChain: certificatePath.map { .file($0) },
            privateKey: privateKeyPath.map { .file($0) }
        )
        var settings = TunnelClientConnection.Settings(host: endpoint.host, port: endpoint.port, tls: try TLSContext(configuration: configuration))
        settings.serverName = serverName ?? named.host
        settings.credentials = credentials
        return settings
    }

    /// `--server-address`, when given, in place of `--server`'s host: no name
    /// lookup, at the start or later (a spoofed answer cannot move the tunnel,
    /// and a full tunnel's DNS is not needed to find the server again).
    private func address(for named: TunnelEndpoint) throws -> TunnelEndpoint {
        guard let serverAddress else { return named }
        let bare = serverAddress.hasPrefix("[") && serverAddress.hasSuffix("]") ? String(serverAddress.dropFirst().dropLast()) : serverAddress
        guard (try? SocketAddress(ipAddress: bare, port: named.port)) != nil else {
            throw TunnelClientLaunchError(
                "--server-address \(serverAddress): expected an IPv4 or IPv6 address (the name, for the certificate, stays in --server)")
        }
        return TunnelEndpoint(host: bare, port: named.port)
    }

    /// `--server`'s `HOST:PORT` or `[IPv6]:PORT`.
    public static func parseServer(_ text: String) throws -> TunnelEndpoint {
        try parseEndpoint(text, option: "--server")
    }

    /// `HOST:PORT` or `[IPv6]:PORT`, errors naming the option it came from.
    public static func parseEndpoint(_ text: String, option: String) throws -> TunnelEndpoint {
        do {
            return try TunnelEndpoint(parsing: text)
        } catch {
            throw TunnelClientLaunchError("\(option) \(text): \(error.problem)")
        }
    }

    /// 64 hex digits, colons allowed (as `openssl x509 -fingerprint` prints them).
    static func parseFingerprint(_ text: String) throws -> [UInt8] {
        guard let bytes = HexEncoding.decode(text), bytes.count == 32 else {
            throw TunnelClientLaunchError("--pin-sha256 \(text): expected the certificate's SHA-256 fingerprint as 64 hex digits")
        }
        return bytes
    }
}

public struct TunnelClientLaunchError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
