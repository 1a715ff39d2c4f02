import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOTLS

/// The client's connection state, named as NEVPNStatus names them.
public enum TunnelClientState: String, Sendable, Codable {
    case disconnected, connecting, connected, reasserting, disconnecting
}

/// What `tunnel-client status` shows.
public struct TunnelClientStatus: Sendable, Codable, Equatable {
    public var state: TunnelClientState
    public var server: String
    public var tlsVersion: String?
    public var tlsCipher: String?
    public var lease: String?
    public var openFlows: Int
    public var bytesSent: UInt64
    public var bytesReceived: UInt64
    public var uptimeSeconds: Double?
    public var roundTripMilliseconds: Double?
    public var lastError: String?
    /// Tunnels brought back after a loss since the client started.
    public var reconnections: Int = 0
    /// The kill switch, when one is up (`KillSwitchRules.summary`).
    public var killSwitch: String?
    /// Routes added while the tunnel was up that win over its routes (`RouteWatch`), and the last of them.
    public var routesOverTunnel: Int = 0
    public var lastRouteOverTunnel: String?

    /// The lines people read.
    public var text: String {
        var lines = ["state: \(state.rawValue)", "server: \(server)"]
        if let tlsVersion { lines.append("tls: \(tlsVersion) \(tlsCipher ?? "")") }
        if let lease { lines.append("lease: \(lease)") }
        if let killSwitch { lines.append("kill switch: \(killSwitch)") }
        if routesOverTunnel > 0 {
            lines.append("routes over the tunnel: \(routesOverTunnel), the last \(lastRouteOverTunnel ?? "?")\(killSwitch == nil ? " (traffic there leaks)" : " (dropped by the kill switch)")")
        }
        lines.append("open flows: \(openFlows)")
        lines.append("bytes: \(bytesSent) sent, \(bytesReceived) received")
        if let uptimeSeconds { lines.append("uptime: \(Int(uptimeSeconds)) s") }
        if let roundTripMilliseconds { lines.append(String(format: "round trip: %.1f ms", roundTripMilliseconds)) }
        if reconnections > 0 { lines.append("reconnections: \(reconnections)") }
        if let lastError { lines.append("last error: \(lastError)") }
        return lines.joined(separator: "\n")
    }
}

/// The running client's state, shared with its control socket.
public final class TunnelClientStatusBoard: Sendable {
    private struct Fields {
        var state = TunnelClientState.disconnected
        var tunnel: TunnelClientConnection?
        var connectedAt: NIODeadline?
        var lease: String?
        var killSwitch: String?
        var routesOverTunnel = 0
        var lastRouteOverTunnel: String?
        var lastError: String?
        var stopRequested = false
        var onStop: [@Sendable () -> Void] = []
        /// Tunnels brought back after a loss.
        var reconnections = 0
    }

    public let server: String
    private let fields = NIOLockedValueBox(Fields())

    public init(server: String) {
        self.server = server
    }

    public var state: TunnelClientState { fields.withLockedValue { $0.state } }
    public var stopRequested: Bool { fields.withLockedValue { $0.stopRequested } }

    func set(_ state: TunnelClientState) {
        fields.withLockedValue { $0.state = state }
    }

    /// A tunnel is up (the first, or one brought back); closed at once if a stop came first.
    func connected(_ tunnel: TunnelClientConnection) {
        let stopping = fields.withLockedValue { fields -> Bool in
            if fields.tunnel != nil { fields.reconnections += 1 }
            fields.tunnel = tunnel
            fields.connectedAt = .now()
            if !fields.stopRequested { fields.state = .connected }
            return fields.stopRequested
        }
        if stopping {
            tunnel.channel.close(promise: nil)
        }
    }

    /// Runs `action` when a stop is requested (at once if one was).
    func onStop(_ action: @escaping @Sendable () -> Void) {
        let already = fields.withLockedValue { fields -> Bool in
            if !fields.stopRequested { fields.onStop.append(action) }
            return fields.stopRequested
        }
        if already { action() }
    }

    public func setLease(_ lease: String?) {
        fields.withLockedValue { $0.lease = lease }
    }

    public func setKillSwitch(_ summary: String?) {
        fields.withLockedValue { $0.killSwitch = summary }
    }

    /// A route that wins over the tunnel's was added (`RouteWatch`).
    func noteRouteOverTunnel(_ description: String) {
        fields.withLockedValue {
            $0.routesOverTunnel += 1
            $0.lastRouteOverTunnel = description
        }
    }

    func failed(_ error: Error) {
        fields.withLockedValue { $0.lastError = String(describing: error) }
    }

    /// Asks the client to stop, as SIGTERM would.
    func requestStop() {
        let (tunnel, actions) = fields.withLockedValue { fields -> (TunnelClientConnection?, [@Sendable () -> Void]) in
            fields.stopRequested = true
            fields.state = .disconnecting
            defer { fields.onStop.removeAll() }
            return (fields.tunnel, fields.onStop)
        }
        tunnel?.channel.close(promise: nil)
        for action in actions { action() }
    }

    /// The status now, with live counters from the tunnel's event loop.
    public func snapshot() async -> TunnelClientStatus {
        let fields = self.fields.withLockedValue { $0 }
        var status = TunnelClientStatus(
            state: fields.state, server: server, lease: fields.lease, openFlows: 0, bytesSent: 0, bytesReceived: 0,
            lastError: fields.lastError, reconnections: fields.reconnections, killSwitch: fields.killSwitch,
            routesOverTunnel: fields.routesOverTunnel, lastRouteOverTunnel: fields.lastRouteOverTunnel)
        if let connectedAt = fields.connectedAt, fields.state == .connected {
            status.uptimeSeconds = Double((NIODeadline.now() - connectedAt).nanoseconds) / 1e9
        }
        guard let tunnel = fields.tunnel, fields.state == .connected else { return status }
        let live = try? await tunnel.eventLoop.submit { () -> (TunnelStatistics, TLSSessionInfo?, TimeAmount?) in
            let pipeline = tunnel.channel.pipeline.syncOperations
            let session = (try? pipeline.handler(type: TLSHandler.self))?.sessionInfo
            let roundTrip = (try? pipeline.handler(type: TunnelChannelHandler.self))?.roundTrip
            return (tunnel.multiplexer.currentStatistics, session, roundTrip)
        }.get()
        if let (statistics, session, roundTrip) = live {
            status.openFlows = statistics.openFlows
            status.bytesSent = statistics.bytesToPeer
            status.bytesReceived = statistics.bytesFromPeer
            status.tlsVersion = session?.protocolVersion
            status.tlsCipher = session?.cipher
            status.roundTripMilliseconds = roundTrip.map { Double($0.nanoseconds) / 1e6 }
        }
        return status
    }
}
