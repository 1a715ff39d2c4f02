extension ServerLimit {
    /// Every server limit (PROTOCOL.md B5, `Examples/tunnel-server.plist`). A new
    /// limit is an entry here, beside its `@Option` and the runtime field it sets.
    /// Merged in this order, which error messages also list the keys in:
    /// `FlowSockets` comes after the tunnel and flow limits its share is taken from.
    static let all: [ServerLimit] = [
        .count(
            "FlowsPerTunnel", flag: "--max-flows-per-tunnel", name: "flows per tunnel", option: \.maximumFlowsPerTunnel,
            runtime: \.multiplexerLimits.maximumFlows, live: true),
        .count("Tunnels", flag: "--max-tunnels", name: "max tunnels", option: \.maximumTunnels, runtime: \.maximumTunnels, live: true),
        .count(
            "TunnelsPerLogin", flag: "--max-tunnels-per-login", name: "tunnels per login", option: \.tunnelsPerLogin,
            runtime: \.tunnelsPerLogin, live: true),
        .seconds(
            "FirstMessageTimeout", flag: "--first-message-timeout", name: "first message timeout", option: \.firstMessageTimeout,
            runtime: \.firstMessageTimeout, live: true, default: { TunnelServerLaunch.defaultFirstMessageTimeout(plaintext: $0.plaintext) }),
        .seconds(
            "ConnectTimeout", flag: "--connect-timeout", name: "connect timeout", option: \.connectTimeout,
            runtime: \.opener.connectTimeout, live: true),
        .seconds(
            "UDPIdleTimeout", flag: "--udp-idle-timeout", name: "UDP idle timeout", option: \.udpIdleTimeout,
            runtime: \.multiplexerLimits.udpIdleTimeout, live: true),
        .count(
            "UDPFlowsPerTunnel", flag: "--max-udp-flows-per-tunnel", name: "UDP flows per tunnel", option: \.maximumUDPFlowsPerTunnel,
            runtime: \.multiplexerLimits.maximumUDPFlows, live: true),
        .flowSockets("FlowSockets", flag: "--max-flow-sockets", name: "flow sockets", option: \.maximumFlowSockets),
        .seconds(
            "FlowDrainTimeout", flag: "--flow-drain-timeout", name: "flow drain timeout", option: \.flowDrainTimeout,
            runtime: \.opener.drainTimeout, live: true),
        .idleTimeout("IdleTimeout", flag: "--idle-timeout", name: "idle timeout", option: \.idleTimeout),
        .mebibytes(
            "TunnelBufferMiB", flag: "--tunnel-buffer-mib", name: "tunnel buffer", option: \.tunnelBufferMiB,
            runtime: \.multiplexerLimits.tunnelBufferBudget, live: true),
        .mebibytes(
            "EarlyDataMiB", flag: "--early-data-mib", name: "early data buffer", option: \.earlyDataMiB,
            runtime: \.multiplexerLimits.tunnelEarlyDataBudget, live: true),
        .serverBuffer("ServerBufferMiB", flag: "--server-buffer-mib", name: "server buffer", option: \.serverBufferMiB),
        .startups("Startups", flag: "--max-startups", name: "max startups", option: \.startups, runtime: \.startups, live: true),
        .count(
            "StartupsPerAddress", flag: "--max-startups-per-address", name: "startups per address", option: \.startupsPerAddress,
            runtime: \.startupsPerAddress, live: true),
        .seconds(
            "TLSHandshakeTimeout", flag: "--tls-handshake-timeout", name: "TLS handshake timeout", option: \.tlsHandshakeTimeout,
            runtime: \.tlsHandshakeTimeout, live: true),
        .login(
            "LoginChecks", flag: "--max-login-checks", name: "login checks", option: \.loginChecks,
            merged: \.checks.concurrent, running: { $0.checker.limits.concurrent }),
        .login(
            "LoginChecksPerAddress", flag: "--max-login-checks-per-address", name: "login checks per address", option: \.loginChecksPerAddress,
            merged: \.checks.perSource, running: { $0.checker.limits.perSource }),
        .login(
            "LoginFailures", flag: "--max-login-failures", name: "login failures", option: \.loginFailures,
            merged: \.failures, running: { $0.limiter.maximumFailures }),
    ]

    /// Merges every limit of one launch: for each, the flag, else the file's value, else the default.
    static func merge(_ options: TunnelServerLaunchOptions, _ file: TunnelServerSettings.Limits, into merge: inout LimitMerge) throws {
        for limit in all {
            try limit.apply(options, file[limit.key], &merge)
        }
    }
}
