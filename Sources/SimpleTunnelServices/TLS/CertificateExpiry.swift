import Foundation

/// One certificate's subject and the end of its validity.
public struct CertificateValidity: Sendable, Equatable {
    public var subject: String
    public var notAfter: Date

    public init(subject: String, notAfter: Date) {
        self.subject = subject
        self.notAfter = notAfter
    }
}

/// When the certificates a context was made with stop being valid, and what
/// to tell the operator about it: the server's own certificate from
/// `warningWindow` before its end (clients refuse it after), and any client CA
/// already expired (the certificates it issued are refused then).
/// Read once per context: a reload reads the files again, and a renewal is
/// seen then.
public struct CertificateExpiry: Sendable, Equatable {
    /// 30 days: the time a renewal by hand or a failing ACME job needs to be noticed and done.
    public static let warningWindow: TimeInterval = 30 * 86_400

    /// Our certificate's (the chain's first) notAfter; nil when none was read.
    public var certificateNotAfter: Date?
    /// The server's client CAs (`--client-ca`), each with its end of validity.
    public var clientCAs: [CertificateValidity]

    public init(certificateNotAfter: Date?, clientCAs: [CertificateValidity]) {
        self.certificateNotAfter = certificateNotAfter
        self.clientCAs = clientCAs
    }

    /// Seconds until our certificate expires (negative once it has), for `simpletunnel_certificate_expiry_seconds`.
    public func secondsLeft(now: Date = Date()) -> Double? {
        certificateNotAfter.map { $0.timeIntervalSince(now) }
    }

    /// What the log and `status` say now; empty while all is well.
    public func warnings(now: Date = Date()) -> [String] {
        var warnings: [String] = []
        if let end = certificateNotAfter {
            let left = end.timeIntervalSince(now)
            if left <= 0 {
                warnings.append(
                    "the server certificate expired on \(Self.day(end)): clients refuse it; renew it and reload (systemctl reload tunnel-server, or SIGHUP)")
            } else if left <= Self.warningWindow {
                let days = Int((left / 86_400).rounded(.down))
                let when = days == 0 ? "within a day" : "in \(days) day\(days == 1 ? "" : "s")"
                warnings.append(
                    "the server certificate expires on \(Self.day(end)), \(when): "
                        + "renew it and reload (systemctl reload tunnel-server, or SIGHUP); clients refuse it after that")
            }
        }
        for ca in clientCAs where ca.notAfter <= now {
            warnings.append(
                "the client CA \(PeerText.quoted(ca.subject, limit: 200)) expired on \(Self.day(ca.notAfter)): "
                    + "client certificates it issued are refused; replace it in the --client-ca file and reload")
        }
        return warnings
    }

    private static func day(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
