/// A `--database` address as an error or log line may show it: a password in
/// its user info and every query value (or a fragment) become "***", since an
/// operator may have put a secret there despite being told not to. Works on
/// text that is not a valid address too, and would rather hide too much.
enum DatabaseAddressRedaction {
    static let mask = "***"

    static func redacted(_ text: String) -> String {
        var text = text
        let authority = text.range(of: "://")?.upperBound ?? text.startIndex
        // The last '@': a password may hold '/', '?' or '#' unescaped.
        if let at = text[authority...].lastIndex(of: "@"), let colon = text[authority..<at].firstIndex(of: ":") {
            text.replaceSubrange(text.index(after: colon)..<at, with: mask)
        }
        var fragment = ""
        if let hash = text.firstIndex(of: "#") {
            fragment = "#" + mask
            text = String(text[..<hash])
        }
        guard let question = text.firstIndex(of: "?") else { return text + fragment }
        let items = text[text.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            guard let equals = item.firstIndex(of: "=") else { return item.isEmpty ? "" : mask }
            return item[...equals] + mask
        }
        return text[...question] + items.joined(separator: "&") + fragment
    }
}
