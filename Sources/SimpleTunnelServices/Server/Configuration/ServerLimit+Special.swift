import NIOCore

/// The limits whose value is not a plain field: a policy written as text, and
/// the server-wide budgets, which are objects tunnels hold and are derived
/// from the machine when left out.
extension ServerLimit {
    /// Connections not yet past TLS and login, as OpenSSH writes MaxStartups
    /// ("START:RATE:FULL"), or in the file a single number for FULL.
    static func startups(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, String?> & Sendable,
        runtime: WritableKeyPath<TunnelServer.Settings, StartupsPolicy> & Sendable, live: Bool
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: live,
            read: { node throws(ConfigurationError) in .startups(try startupsPolicy(node)) },
            apply: { options, file, merge in
                if let text = options[keyPath: option] {
                    do {
                        merge.settings[keyPath: runtime] = try boundedStartupsPolicy(parsing: text)
                    } catch {
                        throw TunnelServerLaunchError.invalidOption("\(flag) \(error)")
                    }
                } else if case .startups(let policy)? = file {
                    merge.settings[keyPath: runtime] = policy
                }
            },
            describe: { "\($0[keyPath: runtime])" },
            keep: { running, settings in settings[keyPath: runtime] = running[keyPath: runtime] })
    }

    private static func startupsPolicy(_ node: ConfigurationNode) throws(ConfigurationError) -> StartupsPolicy {
        let expected = "START:RATE:FULL (such as \"\(StartupsPolicy.default)\") or a number"
        if case .integer = node.value {
            let full = try node.positiveInteger(maximum: maximumCount)
            return StartupsPolicy(uncheckedStart: full, rate: 100, full: full)
        }
        let text = try node.string(expected: expected)
        do throws(StartupsPolicyError) {
            return try boundedStartupsPolicy(parsing: text)
        } catch {
            throw node.invalid(expected: expected, detail: error.description)
        }
    }

    /// The flag and the file take the same range: FULL at most `maximumCount`, as every count.
    private static func boundedStartupsPolicy(parsing text: String) throws(StartupsPolicyError) -> StartupsPolicy {
        let policy = try StartupsPolicy(parsing: text)
        guard policy.full <= maximumCount else { throw .outOfRange(start: policy.start, rate: policy.rate, full: policy.full) }
        return policy
    }

    /// How long a tunnel with no open flow may stay silent before it is
    /// closed; 0 turns the timeout off ("never"), from the file as from the flag.
    static func idleTimeout(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Duration?> & Sendable
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: true,
            read: { node throws(ConfigurationError) in .seconds(try node.seconds(maximum: maximumSeconds, allowsZero: true)) },
            apply: { options, file, merge in
                guard let timeout = try flagOrFileSeconds(options[keyPath: option], file, flag: flag, allowsZero: true) else { return }
                merge.settings.liveness.idleTimeout = timeout == .zero ? nil : timeout
            },
            describe: { $0.liveness.idleTimeout.map { "\($0.userSeconds) s" } ?? "never" },
            keep: { running, settings in settings.liveness.idleTimeout = running.liveness.idleTimeout })
    }

    /// What all tunnels together may hold for their clients, in MiB; left out,
    /// the quarter of RAM `TunnelServer.Settings` starts with. Tunnels hold the
    /// budget itself, so a reload keeps it.
    static func serverBuffer(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: false,
            read: { node throws(ConfigurationError) in .count(try node.positiveInteger(maximum: maximumMiB)) },
            apply: { options, file, merge in
                guard let mebibytes = options[keyPath: option] ?? file?.count else { return }
                merge.settings.bufferBudget = ServerBufferBudget(limit: try positive(mebibytes, flag, maximum: maximumMiB) << 20)
            },
            describe: { "\($0.bufferBudget.limit >> 20) MiB" },
            keep: { running, settings in settings.bufferBudget = running.bufferBudget })
    }

    /// Flow sockets of all tunnels together: what the open-file limit leaves,
    /// or less if asked, with a warning when that is less than the operator
    /// expects. Its per-tunnel share needs the tunnel and flow limits merged first.
    static func flowSockets(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: false,
            read: { node throws(ConfigurationError) in .count(try node.positiveInteger(maximum: maximumCount)) },
            apply: { options, file, merge in
                let tunnels = merge.settings.maximumTunnels, openFileLimit = merge.openFileLimit
                let left = FlowSocketBudget.serverLimit(openFileLimit: openFileLimit, maximumTunnels: tunnels)
                let remedy = "raise the hard open-file limit (LimitNOFILE= in a systemd unit, ulimit -Hn) or lower --max-tunnels"
                var limit = left
                if let asked = options[keyPath: option] ?? file?.count {
                    limit = min(try positive(asked, flag, maximum: maximumCount), left)
                    if asked > left {
                        merge.warnings.append(
                            "\(flag) \(asked): the open-file limit of \(openFileLimit) leaves \(left) beside \(tunnels) tunnels, so \(left) it is; \(remedy)")
                    }
                } else if left < 64 {
                    merge.warnings.append("the open-file limit of \(openFileLimit) leaves only \(left) flow sockets beside \(tunnels) tunnels; \(remedy)")
                }
                let share = FlowSocketBudget.tunnelShare(serverLimit: limit, maximumFlowsPerTunnel: merge.settings.multiplexerLimits.maximumFlows)
                merge.settings.opener.socketBudget = FlowSocketBudget(serverLimit: limit, tunnelShare: share)
            },
            describe: { "\($0.opener.socketBudget.serverLimit)" },
            keep: { running, settings in settings.opener.socketBudget = running.opener.socketBudget })
    }
}
