/// What to say when the server's certificate is valid but made for other
/// names: the usual cause is connecting by address to a certificate made for
/// a name, which `--server-name` cures while `--server` keeps the address.
enum ServerNameMismatchText {
    static func describe(expected: String, certificateNames: [String]) -> String {
        let byAddress = IPAddress(expected) != nil
        let what = byAddress ? "the address \(expected)" : "the name \(expected)"
        guard !certificateNames.isEmpty else {
            return "TLS server certificate is not made for \(what), and its names cannot be read:"
                + " give --server-name NAME with the name it was made for (tunnel-server prints it at start)"
        }
        let listed = certificateNames.joined(separator: ", ")
        // Suggest a host name over an address: an address that fits would have matched.
        let suggestion = certificateNames.first { IPAddress($0) == nil } ?? certificateNames[0]
        let keep = byAddress ? ", keeping the address in --server" : ""
        return "TLS server certificate is not made for \(what); it is for \(listed):"
            + " connect with --server-name \(suggestion)\(keep)"
    }
}
