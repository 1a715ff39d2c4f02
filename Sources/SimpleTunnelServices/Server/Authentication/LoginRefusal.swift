/// Why a login was refused; the ones a peer can cause without a hash being
/// run are logged through a throttle (`ThrottledRefusalLog`).
enum LoginRefusal: String, Sendable, Hashable, CustomStringConvertible {
    case notFirst = "not_first"
    case rateLimited = "rate_limited"
    case busy
    case oversized

    var description: String {
        switch self {
        case .notFirst: return "this server requires authenticate as the first message"
        case .rateLimited: return "too many failed logins from one address; try again later"
        case .busy: return "too many logins are being checked"
        case .oversized: return "the login, or what followed it before the answer, was too large"
        }
    }
}
