/// Why an attempt to bring a lost tunnel back failed, told for a server that
/// spoke TLS with this client minutes ago: a connection closed before the
/// handshake then means a server going away (or a load balancer with no
/// server left to pass it to), not a server that runs without TLS.
enum ReconnectFailure {
    static func reason(_ error: any Error) -> String {
        guard let error = error as? TLSError, error == TLSHandshakeFailureRecorder.closedHint else { return "\(error)" }
        return "the server closed the connection before answering the TLS handshake; it answered TLS before, so it "
            + "(or a load balancer in front of it, with no server to pass the connection to) is most likely restarting or failing over"
    }
}
