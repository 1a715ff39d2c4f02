/// What a login may be: what `passwd` accepts, and so the only form a users
/// file or the database can hold. A login sent in `authenticate` that is not
/// of this form is refused as a failed login before any lookup, so a NUL or a
/// newline never reaches the database or a log line.
public enum TunnelLoginSyntax {
    /// Longest login, in characters.
    public static let maximumLength = 64

    /// Why `login` cannot be a login, or nil when it can: 1 to 64 characters,
    /// no ':' (the users file's separator), no white space, no control or
    /// invisible formatting characters.
    public static func problem(with login: String) -> String? {
        guard !login.isEmpty else { return "the login is empty" }
        // Bounded before counting characters: a peer may send 100 KB.
        guard login.utf8.count <= maximumLength * 4, login.count <= maximumLength else {
            return "the login is longer than \(maximumLength) characters"
        }
        for scalar in login.unicodeScalars {
            if scalar == ":" { return "the login contains ':'" }
            if scalar.properties.isWhitespace { return "the login contains white space" }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                return "the login contains a control or invisible character"
            default:
                continue
            }
        }
        return nil
    }

    public static func isValid(_ login: String) -> Bool {
        problem(with: login) == nil
    }
}
