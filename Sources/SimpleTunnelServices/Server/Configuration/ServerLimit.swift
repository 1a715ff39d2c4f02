import NIOCore

/// A value the configuration file gave for one `Server.Limits` key, checked
/// against its range when read.
public enum LimitValue: Sendable, Hashable {
    case count(Int)
    case seconds(Duration)
    case startups(StartupsPolicy)

    var count: Int? {
        guard case .count(let value) = self else { return nil }
        return value
    }

    var seconds: Duration? {
        guard case .seconds(let value) = self else { return nil }
        return value
    }
}

/// One server limit, said once: its `Server.Limits` key, its flag, how the
/// file writes it, where the merged value lands and whether a reload may change
/// it on a running server. The file reader, the merge of flag, file and
/// default in `TunnelServerLaunch.prepare` and the reload all go through
/// `ServerLimit.all`, so none of them can forget a limit.
struct ServerLimit: Sendable {
    /// Key in `Server.Limits`.
    let key: String
    /// The command-line flag, which the merge's errors name.
    let flag: String
    /// What a reload calls it: "NAME: before → after".
    let name: String
    /// A reload applies it to new connections; else the running value is kept until a restart.
    let isLive: Bool
    /// Reads the file's value; errors name `Server.Limits.KEY` and the range.
    let read: @Sendable (ConfigurationNode) throws(ConfigurationError) -> LimitValue
    /// The flag's value, else the file's, else the runtime default (left as it is); errors name the flag.
    let apply: @Sendable (TunnelServerLaunchOptions, LimitValue?, inout LimitMerge) throws -> Void
    /// The value in force, as a reload compares it.
    let describe: @Sendable (TunnelServer.Settings) -> String
    /// Puts the running server's value into the settings a reload brings (for a limit that is not live).
    let keep: @Sendable (_ running: TunnelServer.Settings, _ into: inout TunnelServer.Settings) -> Void

    /// Far above any sensible count, low enough that arithmetic on it cannot overflow.
    static let maximumCount = 1 << 24
    /// One day: a longer timeout is a mistake, and the bound keeps `Duration` exact.
    static let maximumSeconds = UserSeconds.maximum
    /// Largest buffer budget a file may set, in MiB (1 TiB).
    static let maximumMiB = 1 << 20
}

/// Where one launch's limits are merged: the server's settings, and the login
/// limits, which exist only when logins are on (a bad login flag is then not
/// an error, as logins do not use it).
struct LimitMerge {
    var settings: TunnelServer.Settings
    /// Nil: no logins (neither `--users` nor a database).
    var logins: LoginLimits?
    /// The soft open-file limit flow sockets share (`FlowSocketBudget`).
    let openFileLimit: Int
    var warnings: [String] = []

    struct LoginLimits {
        var checks = PasswordCheckLimits()
        var failures = LoginRateLimiter().maximumFailures
    }
}

extension ServerLimit {
    /// A count from 1 to `maximumCount`.
    static func count(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable,
        runtime: WritableKeyPath<TunnelServer.Settings, Int> & Sendable, live: Bool
    ) -> ServerLimit {
        integer(key, flag: flag, name: name, option: option, runtime: runtime, live: live, maximum: maximumCount, shift: 0, unit: "")
    }

    /// A budget in MiB, from 1 to `maximumMiB`, kept in bytes.
    static func mebibytes(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable,
        runtime: WritableKeyPath<TunnelServer.Settings, Int> & Sendable, live: Bool
    ) -> ServerLimit {
        integer(key, flag: flag, name: name, option: option, runtime: runtime, live: live, maximum: maximumMiB, shift: 20, unit: " MiB")
    }

    /// A positive integer up to `maximum`, kept shifted left by `shift` bits and described with `unit`.
    private static func integer(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable,
        runtime: WritableKeyPath<TunnelServer.Settings, Int> & Sendable, live: Bool, maximum: Int, shift: Int, unit: String
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: live,
            read: { node throws(ConfigurationError) in .count(try node.positiveInteger(maximum: maximum)) },
            apply: { options, file, merge in
                if let value = options[keyPath: option] ?? file?.count { merge.settings[keyPath: runtime] = try positive(value, flag, maximum: maximum) << shift }
            },
            describe: { "\($0[keyPath: runtime] >> shift)\(unit)" },
            keep: { running, settings in settings[keyPath: runtime] = running[keyPath: runtime] })
    }

    /// A timeout in seconds, above 0 and at most `maximumSeconds`. `default` is
    /// for one whose default depends on other options; nil keeps the runtime's.
    static func seconds(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Duration?> & Sendable,
        runtime: WritableKeyPath<TunnelServer.Settings, TimeAmount> & Sendable, live: Bool,
        default: (@Sendable (TunnelServerLaunchOptions) -> Duration)? = nil
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: live,
            read: { node throws(ConfigurationError) in .seconds(try node.seconds(maximum: maximumSeconds)) },
            apply: { options, file, merge in
                if let timeout = try flagOrFileSeconds(options[keyPath: option], file, flag: flag) {
                    merge.settings[keyPath: runtime] = timeout
                } else if let fallback = `default`?(options) {
                    merge.settings[keyPath: runtime] = TimeAmount(fallback)
                }
            },
            describe: { "\($0[keyPath: runtime].userSeconds) s" },
            keep: { running, settings in settings[keyPath: runtime] = running[keyPath: runtime] })
    }

    /// A login limit: checked and set only when logins are on, and, as the
    /// checker and limiter are made once, kept until a restart.
    static func login(
        _ key: String, flag: String, name: String, option: KeyPath<TunnelServerLaunchOptions, Int?> & Sendable,
        merged: WritableKeyPath<LimitMerge.LoginLimits, Int> & Sendable,
        running: @escaping @Sendable (TunnelServer.Settings.Authentication) -> Int
    ) -> ServerLimit {
        ServerLimit(
            key: key, flag: flag, name: name, isLive: false,
            read: { node throws(ConfigurationError) in .count(try node.positiveInteger(maximum: maximumCount)) },
            apply: { options, file, merge in
                guard merge.logins != nil, let value = options[keyPath: option] ?? file?.count else { return }
                merge.logins?[keyPath: merged] = try positive(value, flag, maximum: maximumCount)
            },
            describe: { $0.authentication.map { "\(running($0))" } ?? "no logins" },
            keep: { running, settings in settings.authentication = running.authentication })
    }

    /// A flag's value, held to the range the file's key has: beyond it a
    /// count's arithmetic, or a budget shifted to bytes, would overflow.
    static func positive(_ value: Int, _ flag: String, maximum: Int) throws -> Int {
        guard value > 0 else { throw TunnelServerLaunchError.invalidOption("\(flag) \(value): expected a positive number") }
        guard value <= maximum else { throw TunnelServerLaunchError.invalidOption("\(flag) \(value): expected at most \(maximum)") }
        return value
    }

    /// The flag's duration, checked, else the file's (checked when read); nil when neither gives one.
    static func flagOrFileSeconds(_ flagged: Duration?, _ file: LimitValue?, flag: String, allowsZero: Bool = false) throws -> TimeAmount? {
        guard let flagged else { return file?.seconds.map(TimeAmount.init) }
        do {
            return try UserSeconds.checked(flagged, option: flag, allowsZero: allowsZero)
        } catch {
            throw TunnelServerLaunchError.invalidOption(error.description)
        }
    }
}
