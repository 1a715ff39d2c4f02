/// What a failed attempt to bring the tunnel up means, and whether to try again.
///
/// Before the first tunnel is up, a failure no retry can cure (a refused
/// login, an untrusted certificate) ends the client: the user mistyped
/// something and should hear it at once. Once a tunnel has been up, every
/// failure is retried: the settings were right a moment ago, and giving up
/// would remove the routes (and the kill switch) and send everything in the
/// clear, which is exactly what someone on the path who presents a bad
/// certificate would want. Only `stop` (or SIGTERM) ends a client then.
enum ReconnectFailure {
    enum Decision: Equatable {
        /// Try again after the backoff's wait; `reason` is for the log.
        case retry(reason: String)
        /// End the client with this error.
        case giveUp
    }

    /// `afterLoss`: a tunnel of this client has been up before.
    static func decide(_ error: any Error, afterLoss: Bool) -> Decision {
        guard afterLoss else { return isPermanent(error) ? .giveUp : .retry(reason: "\(error)") }
        guard isPermanent(error) else { return .retry(reason: reason(error)) }
        return .retry(
            reason: "\(error); the server was trusted before, so this may be someone on the path posing as it: "
                + "trying again, with the tunnel's routes (and kill switch) kept so nothing goes out in the clear meanwhile")
    }

    /// Failures that another attempt with the same settings cannot cure; a login
    /// the server could not check now (`TunnelLoginUnavailableError`) is not one.
    static func isPermanent(_ error: any Error) -> Bool {
        switch error {
        case is TunnelLoginRefusedError: return true
        case is TunnelLoginUnavailableError: return false
        case let error as TLSError: return error.isPermanent
        default: return false
        }
    }

    /// Told for a server that spoke TLS with this client minutes ago: a
    /// connection closed before the handshake then means a server going away
    /// (or a load balancer with no server left to pass it to), not a server
    /// that runs without TLS.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? TLSError, error == TLSHandshakeFailureRecorder.closedHint else { return "\(error)" }
        return "the server closed the connection before answering the TLS handshake; it answered TLS before, so it "
            + "(or a load balancer in front of it, with no server to pass the connection to) is most likely restarting or failing over"
    }
}
