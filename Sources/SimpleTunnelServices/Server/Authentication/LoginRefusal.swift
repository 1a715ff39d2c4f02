/// Why a login was refused; the ones a peer can cause without a hash being
/// run are logged through a throttle (`ThrottledRefusalLog`).
enum LoginRefusal: String, Sendable, Hashable, CustomStringConvertible {
    case notFirst = "not_first"
    case rateLimited = "rate_limited"
    case busy
    case oversized
    case malformedLogin = "malformed_login"
    case directoryUnavailable = "login_directory_unavailable"
    case tunnelsPerLogin = "tunnels_per_login"

    /// Whether the peer is told its login was refused before the tunnel closes. Not when
    /// there was no login, nor when the server was too busy to check it or could not look it up: a client takes
    /// a refusal as final, while a tunnel that just closes is tried again later (and a client that offered
    /// `retry-later` is told result 4 when the logins could not be looked up, PROTOCOL.md B2).
    var isAnswered: Bool {
        switch self {
        case .notFirst, .busy, .directoryUnavailable: return false
        case .rateLimited, .oversized, .malformedLogin, .tunnelsPerLogin: return true
        }
    }

    var description: String {
        switch self {
        case .notFirst:
            return "the client sent no login first (this server needs one: tunnel-client --user NAME, or an app's authenticate, command 10)"
        case .rateLimited: return "too many failed logins from one address; try again later"
        case .busy: return "too many logins are being checked"
        case .oversized: return "the login, or what followed it before the answer, was too large"
        case .malformedLogin:
            return "the login is not one passwd could have made (1 to 64 characters, no ':', spaces or control characters), "
                + "or the logins' store refuses it; counted as a failed login"
        case .directoryUnavailable:
            return "the logins cannot be looked up (the database is unreachable); not a failed login: the client is told to try again later"
        case .tunnelsPerLogin:
            return "the login already holds as many tunnels as one login may (--max-tunnels-per-login, or its groups' Limits.Tunnels); "
                + "`tunnel-server status` lists them, `tunnel-server kick LOGIN` ends them"
        }
    }
}
