import NIOConcurrencyHelpers
import NIOCore

/// The client at the other end of one server tunnel: who it is, once its
/// login or verified certificate says so, and how to end its tunnel.
public final class TunnelPeer: Sendable {
    private let channel: Channel
    private let login = NIOLockedValueBox<String?>(nil)

    init(channel: Channel) {
        self.channel = channel
    }

    /// Set by the authentication gate when the login is accepted.
    func loggedIn(as login: String) {
        self.login.withLockedValue { $0 = login }
    }

    /// The key of this client's durable lease: its login, else its verified
    /// certificate subject; nil for an anonymous client. Only on the tunnel's event loop.
    var identity: String? {
        if let login = login.withLockedValue({ $0 }) {
            return "login:\(login)"
        }
        guard let session = (try? channel.pipeline.syncOperations.handler(type: TLSHandler.self))?.sessionInfo,
            session.peerCertificateVerified, let subject = session.peerCertificateSubject
        else { return nil }
        return "subject:\(subject)"
    }

    /// Ends the tunnel (a newer session of the same client replaced it).
    func close() {
        channel.close(promise: nil)
    }
}
