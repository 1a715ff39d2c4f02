import Foundation

/// Whether a host string is an IPv4 or IPv6 literal rather than a name:
/// such hosts get no SNI and are verified as IP subjectAltNames.
enum IPAddressLiteral {
    static func isValid(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
