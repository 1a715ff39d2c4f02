/// One setting as the operator knows it, for a reload: how it is described
/// (so two launches can be compared and the change named), and, for one that
/// waits for a restart, how the running value is kept. Each setting is
/// declared once, here or in `ServerLimit.all`; the reload's comparison and
/// its copy both come from that one declaration.
struct ReloadAspect: Sendable {
    /// Where a kept value comes from: the settings the server serves with now
    /// (the objects a running server made), and the launch that started it.
    struct Running {
        let serving: TunnelServer.Settings
        let launch: TunnelServerLaunch
    }

    /// What the reload will serve with.
    struct Target {
        var settings: TunnelServer.Settings
        var configuration: TunnelServerConfiguration
    }

    let name: String
    /// Nil: applied live. Otherwise how the running value is put back into
    /// what the reload serves with, until a restart.
    let keep: (@Sendable (Running, inout Target) -> Void)?
    let describe: @Sendable (TunnelServerLaunch) -> String
    /// For values whose description leaves something out.
    let differs: @Sendable (TunnelServerLaunch, TunnelServerLaunch) -> Bool

    var isLive: Bool { keep == nil }

    /// A setting a running server takes at once.
    static func live(
        _ name: String, differs: @escaping @Sendable (TunnelServerLaunch, TunnelServerLaunch) -> Bool = { _, _ in false },
        describe: @escaping @Sendable (TunnelServerLaunch) -> String
    ) -> ReloadAspect {
        ReloadAspect(name: name, keep: nil, describe: describe, differs: differs)
    }

    /// A setting that waits for a restart: `keep` puts the running value back.
    static func untilRestart(
        _ name: String, keep: @escaping @Sendable (Running, inout Target) -> Void, describe: @escaping @Sendable (TunnelServerLaunch) -> String
    ) -> ReloadAspect {
        ReloadAspect(name: name, keep: keep, describe: describe, differs: { _, _ in false })
    }

    init(
        name: String, keep: (@Sendable (Running, inout Target) -> Void)?, describe: @escaping @Sendable (TunnelServerLaunch) -> String,
        differs: @escaping @Sendable (TunnelServerLaunch, TunnelServerLaunch) -> Bool
    ) {
        self.name = name
        self.keep = keep
        self.describe = describe
        self.differs = differs
    }

    init(limit: ServerLimit) {
        var keep: (@Sendable (Running, inout Target) -> Void)? = nil
        if !limit.isLive {
            keep = { (running: Running, target: inout Target) in limit.keep(running.serving, &target.settings) }
        }
        self.init(name: limit.name, keep: keep, describe: { limit.describe($0.settings) }, differs: { _, _ in false })
    }
}
