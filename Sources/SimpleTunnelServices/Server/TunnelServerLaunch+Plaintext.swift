import NIOCore

/// `--plaintext`, the mode of Apple's stock sample app, which speaks plain
/// TCP: no TLS, so tunnels are neither encrypted nor authenticated. Safe by
/// construction: off loopback it needs `--plaintext-clients`, and peers from
/// elsewhere are closed at accept.
struct PlaintextMode: Sendable, Hashable {
    let host: String
    /// Nil on loopback without `--plaintext-clients`: any local program may connect.
    let clientNetworks: IPNetworkList?

    /// Said once at start: what this mode exposes, and to whom.
    func warning(firstMessageTimeout: TimeAmount) -> String {
        let seconds = TunnelServerLaunch.secondsText(firstMessageTimeout)
        guard let clientNetworks else {
            return "--plaintext: tunnels are neither encrypted nor authenticated; only programs on the server's own machine can connect "
                + "(\(host) is loopback). For Apple's stock sample app on a device, listen on the LAN with --host ADDRESS "
                + "--plaintext-clients NETWORK (docs/APPLE-APPS.md). Clients have \(seconds) s to send their first message"
        }
        return "--plaintext: tunnels on \(host) are neither encrypted nor authenticated: anyone on the path can read and change them, "
            + "and any device in \(clientNetworks) can use this server as a proxy. Connections from other addresses are closed unread "
            + "(simpletunnel_admission_refusals_total{reason=\"\(AdmissionRefusal.unlistedAddress.rawValue)\"}). "
            + "Clients have \(seconds) s to send their first message"
    }
}

extension TunnelServerLaunch {
    /// How long a plaintext client may stay silent after connecting: Apple's
    /// app proxy connects when it starts and sends nothing until an app opens
    /// its first connection. The listed networks and the admission caps
    /// bound what idle sockets cost.
    public static let plaintextFirstMessageTimeout: Duration = .seconds(300)

    /// The first-message deadline when neither the flag nor the file sets one.
    static func defaultFirstMessageTimeout(plaintext: Bool) -> Duration {
        plaintext ? plaintextFirstMessageTimeout : Duration(TunnelServer.Settings().firstMessageTimeout)
    }

    /// The plaintext mode the options ask for, nil for TLS; throws when they ask for an unsafe one.
    static func plaintextMode(_ options: TunnelServerLaunchOptions, host: String, loopback: Bool) throws -> PlaintextMode? {
        guard options.plaintext else {
            guard options.plaintextClients == nil else {
                throw TunnelServerLaunchError.invalidOption(
                    "--plaintext-clients applies only with --plaintext; a TLS server admits clients by --client-ca or --users")
            }
            return nil
        }
        var networks: IPNetworkList?
        if let text = options.plaintextClients {
            do {
                networks = try IPNetworkList(parsing: text)
            } catch {
                throw TunnelServerLaunchError.invalidOption("--plaintext-clients \(error)")
            }
        }
        guard loopback || networks != nil else { throw TunnelServerLaunchError.plaintextOffLoopback(host) }
        return PlaintextMode(host: host, clientNetworks: networks)
    }

    /// "300", or "2.5": seconds as an operator wrote them.
    static func secondsText(_ amount: TimeAmount) -> String {
        let nanoseconds = amount.nanoseconds
        return nanoseconds % 1_000_000_000 == 0 ? "\(nanoseconds / 1_000_000_000)" : "\(Double(nanoseconds) / 1e9)"
    }
}
