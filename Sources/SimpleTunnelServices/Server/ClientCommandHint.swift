/// The client command the server prints at start: what a newcomer pastes
/// first, so it must work as printed, or say plainly what to fill in.
public struct ClientCommandHint: Sendable, Equatable {
    /// The command line.
    public var command: String
    /// With the IP layer on: the full tunnel's command line (`tunnel-client ip`, as root).
    public var ipCommand: String?
    /// What to replace in it, if anything.
    public var note: String?
    /// The server's address as the command names it (`HOST:PORT`).
    public var server: String

    /// Stands for an address clients reach when the server cannot name one.
    public static let addressPlaceholder = "SERVER-ADDRESS"

    /// - Parameters:
    ///   - listenHost: the server's `--host`; an unspecified address (`0.0.0.0`,
    ///     `::`) is no address to connect to, so one of `interfaceAddresses`
    ///     (not loopback or link-local; IPv4 first) stands in for it.
    ///   - fingerprint: the certificate to pin; nil for a `--plaintext` server.
    ///   - requiresLogin: with `--users` or `--database`, the client needs `--user`.
    ///   - runFromBuildFolder: before installing, `tunnel-client` is `swift run tunnel-client`
    ///     (and, as root for `ip`, the built binary: `sudo swift run` would build as root).
    ///   - offersIPLayer: the server has an IP layer, so `tunnel-client ip` is worth printing too.
    public static func make(
        pinSHA256 fingerprint: String?, listenHost: String, port: Int, requiresLogin: Bool,
        interfaceAddresses: Set<IPAddress>, runFromBuildFolder: Bool, offersIPLayer: Bool = false
    ) -> ClientCommandHint {
        var notes: [String] = []
        var host = TunnelEndpoint.unbracketed(listenHost)
        if let address = IPAddress(host), address.isUnspecified {
            if let reachable = reachableAddress(among: interfaceAddresses) {
                host = reachable.description
                notes.append("\(host) is one of this machine's addresses; use the one your clients reach")
            } else {
                host = addressPlaceholder
                notes.append("replace \(addressPlaceholder) with an address of this machine that your clients reach")
            }
        }
        let server = TunnelEndpoint(host: host, port: port).description
        var arguments = "--server \(server) " + (fingerprint.map { "--pin-sha256 \($0)" } ?? "--plaintext")
        if requiresLogin {
            arguments += " --user NAME"
            notes.append("NAME is a login of the users file; the password comes from --password-file FILE or $SIMPLETUNNEL_PASSWORD")
        }
        let command = (runFromBuildFolder ? "swift run " : "") + "tunnel-client config " + arguments
        let ipCommand = offersIPLayer ? "sudo " + (runFromBuildFolder ? "$(swift build --show-bin-path)/" : "") + "tunnel-client ip " + arguments : nil
        return ClientCommandHint(command: command, ipCommand: ipCommand, note: notes.isEmpty ? nil : notes.joined(separator: "; "), server: server)
    }

    private static func reachableAddress(among addresses: Set<IPAddress>) -> IPAddress? {
        let candidates = addresses.map(\.unmapped).filter { !$0.isLoopback && !$0.isLinkLocal && !$0.isUnspecified }
        return candidates.sorted { lhs, rhs in
            switch (lhs, rhs) {
            case (.v4, .v6): return true
            case (.v6, .v4): return false
            default: return lhs.description < rhs.description
            }
        }.first
    }
}
