import COpenSSL

/// OpenSSL reports reasons on a per-thread queue; these helpers read it at
/// the point of failure (same thread) so the reason reaches the user.
enum OpenSSLErrorQueue {
    /// Forget stale errors before an operation whose failure we will report.
    static func clear() {
        ERR_clear_error()
    }

    /// Every queued error as ERR_error_string_n text, oldest first, joined;
    /// `fallback` when OpenSSL queued nothing.
    static func drain(fallback: String) -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}
