import Foundation

/// What `tunnel-server status` shows: every tunnel, the totals of those open
/// now, and what the server has counted since it started.
/// Logins and certificate subjects come from peers: JSON escapes them as
/// strings, and the text form prints them quoted (`PeerText`).
public struct TunnelServerStatus: Codable, Sendable, Equatable {
    public struct Tunnel: Codable, Sendable, Equatable {
        /// Nil until the tunnel has logged in, or when the server takes no logins.
        public var login: String?
        /// The verified client certificate's subject (mutual TLS).
        public var certificateSubject: String?
        public var peer: String
        public var leasedAddress: String?
        /// When the connection was accepted, ISO 8601.
        public var since: String
        public var seconds: Double
        public var bytesFromClient: UInt64
        public var bytesToClient: UInt64
        public var openFlows: Int
        /// Nil with --plaintext, or before the handshake finished.
        public var tlsVersion: String?
        /// Its login's groups (`Server.Users`); nil when in none.
        public var groups: [String]?
        /// Its login's fixed address (`IPv4Address`, `IPv6Address`), as `leasedAddress` writes addresses; nil when none.
        public var fixedAddress: String?
        /// What waited in front of the tunnel's link toward its client when asked
        /// (`--json` only); nil until the tunnel has written enough to read its link.
        public var linkQueue: LinkQueue? = nil
    }

    /// From the server's end of one tunnel to its client, in the order bytes
    /// pass: the flows' queues, a flow's turn in the schedule, TLS plaintext, ciphertext in the
    /// channel, the kernel's unsent bytes, bytes in flight. The room is what
    /// the link's measured rate allows them together (`LinkPace`).
    public struct LinkQueue: Codable, Sendable, Equatable {
        public var rateBytesPerSecond: UInt64?
        public var roomBytes: Int
        /// Bytes waiting in the flows' own queues for a turn: what the tunnel
        /// holds back, where an IP flow's CoDel judges its packets.
        public var flowQueueBytes: Int?
        public var turnBytes: Int
        public var tlsPlaintextBytes: Int
        public var channelBytes: Int
        /// Nil from a kernel too old to say.
        public var unsentBytes: Int?
        public var inFlightBytes: Int

        init(_ reading: TunnelQueueReading) {
            rateBytesPerSecond = reading.rate
            roomBytes = reading.room
            flowQueueBytes = reading.flowQueueBytes
            turnBytes = reading.turnBytes
            tlsPlaintextBytes = reading.tlsPlaintextBytes
            channelBytes = reading.channelBytes
            unsentBytes = reading.unsentBytes
            inFlightBytes = reading.bytesInFlight
        }
    }

    /// The tunnels open now.
    public struct Totals: Codable, Sendable, Equatable {
        public var tunnels: Int
        public var openFlows: Int
        public var bytesFromClients: UInt64
        public var bytesToClients: UInt64
    }

    /// Since the server started, closed tunnels included: their bytes are
    /// added when they close to the open tunnels' counters.
    public struct SinceStart: Codable, Sendable, Equatable {
        /// ISO 8601.
        public var startedAt: String
        public var tunnelsAccepted: Int
        public var tunnelsClosed: Int
        public var bytesFromClients: UInt64
        public var bytesToClients: UInt64
        public var loginsSucceeded: Int
        /// Wrong passwords, rate-limited and unchecked attempts together (the metrics tell them apart).
        public var loginsFailed: Int
    }

    public var tunnels: [Tunnel]
    public var totals: Totals
    public var sinceStart: SinceStart
    /// What the operator should act on (a certificate near its end); nil when nothing.
    public var warnings: [String]?

    public var text: String {
        var lines = (warnings ?? []).map { "warning: \($0)" }
        lines += [
            "open now: \(totals.tunnels) tunnels, \(totals.openFlows) flows, "
                + "bytes: \(totals.bytesFromClients) from clients, \(totals.bytesToClients) to clients",
            "since \(sinceStart.startedAt): \(sinceStart.tunnelsAccepted) tunnels accepted, \(sinceStart.tunnelsClosed) closed, "
                + "bytes: \(sinceStart.bytesFromClients) from clients, \(sinceStart.bytesToClients) to clients, "
                + "logins: \(sinceStart.loginsSucceeded) succeeded, \(sinceStart.loginsFailed) failed",
        ]
        for tunnel in tunnels {
            let who: String
            if let login = tunnel.login {
                who = "login " + PeerText.quoted(login)
            } else if let subject = tunnel.certificateSubject {
                who = "subject " + PeerText.quoted(subject)
            } else {
                who = "anonymous"
            }
            var line = "\(who)  from \(tunnel.peer)"
            if let groups = tunnel.groups { line += "  groups \(groups.joined(separator: ","))" }
            if let lease = tunnel.leasedAddress { line += "  lease \(lease)" }
            if let fixed = tunnel.fixedAddress { line += "  fixed \(fixed)" }
            line += "  since \(tunnel.since) (\(Int(tunnel.seconds)) s)  bytes \(tunnel.bytesFromClient) in, \(tunnel.bytesToClient) out"
            line += "  flows \(tunnel.openFlows)  \(tunnel.tlsVersion ?? "no TLS")"
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
