/// Text a peer controls (a login, a host, a certificate subject), made safe
/// for a log line or an error message: in double quotes, with quotes,
/// backslashes, control characters and invisible formatting characters
/// (line separators, bidirectional overrides) escaped, so that no peer can end
/// a line and write one of its own, or make one text look like another.
public enum PeerText {
    /// `text` quoted and escaped, cut after `limit` characters ("…" says so).
    public static func quoted(_ text: some StringProtocol, limit: Int = 128) -> String {
        var result = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                result += "…"
                break
            }
            count += 1
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if needsEscape(scalar) {
                    result += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
            return true
        default:
            return false
        }
    }
}
