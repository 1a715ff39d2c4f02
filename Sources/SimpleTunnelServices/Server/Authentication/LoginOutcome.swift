/// How a login attempt ended, as `status` and the metrics count it. A
/// connection that sends no login first made no attempt and is not counted.
enum LoginOutcome: String, Sendable, Hashable, CaseIterable {
    case success
    /// A wrong login or password, or a login no user could have.
    case failure
    /// Refused unchecked: too many recent failures from the address.
    case rateLimited = "rate_limited"
    /// Not checked for want of the server's means (too many checks, the logins' store unreachable): the client retries.
    case unchecked
    /// The right password, but the login holds as many tunnels as it may (`--max-tunnels-per-login`).
    case tunnelsPerLogin = "tunnels_per_login"
}

extension LoginRefusal {
    /// The attempt's outcome; nil when there was no attempt.
    var outcome: LoginOutcome? {
        switch self {
        case .notFirst: return nil
        case .rateLimited: return .rateLimited
        case .busy, .directoryUnavailable: return .unchecked
        case .oversized, .malformedLogin: return .failure
        case .tunnelsPerLogin: return .tunnelsPerLogin
        }
    }
}
